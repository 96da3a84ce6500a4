"""The CNN and the encoder choice: image spaces of every layout get a CNN, vectors an MLP, uint8 kept until the device."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

import rlcore
from rl_plugin_nets import CNN, MLPEncoder, MultiInputEncoder, NatureCNN, encoder_for, image_encoder, image_layout, is_image_space


@pytest.mark.parametrize(
    ("shape", "dtype", "channels", "channels_last"),
    [
        ((84, 84, 4), np.uint8, 4, True),  # Gymnasium's HWC
        ((4, 84, 84), np.uint8, 4, False),  # a stack of grey frames (frame_stack after atari)
        ((84, 84), np.uint8, 1, False),  # one grey frame
        ((4, 96, 96, 3), np.uint8, 12, True),  # a stack of colour frames
        ((10, 10, 4), bool, 4, True),  # MinAtar
    ],
)
def test_image_spaces_get_a_cnn_of_the_right_layout(shape, dtype, channels, channels_last) -> None:
    space = spaces.Box(0, 255 if dtype is np.uint8 else 1, shape, dtype)
    assert is_image_space(space)
    encoder = encoder_for(space)
    assert isinstance(encoder, CNN) and encoder.layout.channels == channels and encoder.layout.channels_last == channels_last
    obs = torch.as_tensor(np.stack([space.sample() for _ in range(6)])).reshape(2, 3, *shape)
    assert encoder(obs).shape == (2, 3, encoder.out_dim)  # leading dims kept
    first = encoder.net[0]
    assert first.in_channels == channels and first.kernel_size == ((8, 8) if min(shape[-3:-1] if channels_last else shape[-2:]) >= 36 else (3, 3))


def test_vector_spaces_get_an_mlp_and_cnn_is_refused_on_them() -> None:
    space = spaces.Box(-1, 1, (17,), np.float32)
    assert not is_image_space(space) and isinstance(encoder_for(space), MLPEncoder)
    assert not is_image_space(spaces.Box(0, 255, (4, 5), np.uint8))  # too small to be an image
    with pytest.raises(ValueError, match="a CNN needs an image observation space"):
        encoder_for(space, "cnn")
    with pytest.raises(ValueError, match="unknown encoder 'rnn'"):
        encoder_for(space, "rnn")  # type: ignore[arg-type]


def test_uint8_frames_are_scaled_on_the_device_and_match_float_input() -> None:
    torch.manual_seed(0)
    cnn = NatureCNN((84, 84, 4))
    frames = torch.randint(0, 256, (5, 84, 84, 4), dtype=torch.uint8)
    floats = CNN((84, 84, 4), dtype="float32")
    floats.load_state_dict(cnn.state_dict())
    torch.testing.assert_close(cnn(frames), floats(frames.float() / 255))  # the same network, scaled inside
    assert image_layout((84, 84, 4), np.uint8).scale == 255.0
    with torch.no_grad():  # a batch beyond the chunk size is valued in chunks, with the same result
        many = torch.randint(0, 256, (1100, 84, 84, 4), dtype=torch.uint8)
        torch.testing.assert_close(cnn(many)[:5], cnn(many[:5]))


def test_nature_cnn_is_the_papers_network() -> None:
    cnn = NatureCNN((4, 84, 84))
    convs = [m for m in cnn.net if isinstance(m, torch.nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size[0], c.stride[0]) for c in convs] == [(32, 8, 4), (64, 4, 2), (64, 3, 1)]
    assert cnn.net[-2].in_features == 64 * 7 * 7 and cnn.out_dim == 512
    assert sum(p.numel() for p in cnn.parameters()) == 1_684_128
    with pytest.raises(ValueError, match="leave no pixel"):
        CNN((10, 10, 4), channels=[32, 64], kernels=[8, 4], strides=[4, 2], dtype=bool)


def test_importing_the_plugin_does_not_import_torch() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import sys, rl_plugin_nets; assert 'torch' not in sys.modules"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_cnn_sizes_of_another_depth_than_the_preset_name_the_keys_to_set() -> None:
    from rl_plugin_nets import image_encoder

    small = spaces.Box(0, 255, (10, 10, 4), np.uint8)  # MinAtar's: the one-layer preset
    with pytest.raises(rlcore.ConfigError) as raised:
        image_encoder(small, cnn_channels=[8, 8])
    assert str(raised.value) == (
        "algo.cnn_channels: 2 convolutions, and the preset's cnn_kernels and cnn_strides are for 1: set them too (one entry per convolution)"
    )
    cnn = image_encoder(small, cnn_channels=[8, 8], cnn_kernels=[3, 3], cnn_strides=[1, 1])
    assert len([m for m in cnn.modules() if isinstance(m, torch.nn.Conv2d)]) == 2


def test_the_mlp_initialises_as_linear_or_as_cleanrl_and_activates_a_trunk_last() -> None:
    import typing

    import rl_plugin_nets
    from rl_plugin_nets import ACTIVATIONS, MLP

    assert typing.get_args(rl_plugin_nets.Activation) == tuple(ACTIVATIONS)  # the option's choices are the activations
    torch.manual_seed(0)
    linear = MLP([4, 64, 2], "relu")
    assert linear.weight0.abs().max() <= 0.5 and linear.bias0.abs().max() > 0  # U(+-1/sqrt(4)), biases too
    cleanrl = MLP([4, 64, 2], "tanh", init="orthogonal", out_gain=0.01)
    w0, w1 = cleanrl.weight0.t(), cleanrl.weight1.t()  # [out, in]: orthogonal rows scaled by the gain
    assert torch.allclose(w0.t() @ w0, 2.0 * torch.eye(4), atol=1e-5) and torch.allclose(w1 @ w1.t(), 1e-4 * torch.eye(2), atol=1e-7)
    assert not cleanrl.bias0.any() and not cleanrl.bias1.any()
    x = torch.randn(3, 5, 4)  # leading dimensions are kept
    expected = torch.addmm(cleanrl.bias1, torch.tanh(x.reshape(15, 4) @ cleanrl.weight0), cleanrl.weight1).reshape(3, 5, 2)
    assert torch.allclose(cleanrl(x), expected, atol=1e-6)
    trunk = MLP([4, 8], "relu", activate_last=True)
    assert (trunk(torch.randn(100, 4)) >= 0).all() and (MLP([4, 8], "relu")(torch.randn(100, 4)) < 0).any()
    with pytest.raises(ValueError, match="unknown activation 'sigmoid'; valid choices: relu, tanh"):
        MLP([4, 8], "sigmoid")


def test_a_dict_space_gets_a_cnn_per_image_entry_and_the_others_flattened() -> None:
    from tensordict import TensorDict

    space = spaces.Dict({"image": spaces.Box(0, 255, (10, 10, 3), np.uint8), "goal": spaces.Box(-1, 1, (2, 2), np.float32)})
    encoder = image_encoder(space, cnn_features=16)
    assert isinstance(encoder, MultiInputEncoder) and encoder.keys == ["goal", "image"]  # (Gymnasium sorts a Dict's keys)
    assert isinstance(encoder.encoders["image"], CNN) and isinstance(encoder.encoders["goal"], MLPEncoder)
    assert encoder.out_dim == 16 + 4
    rows = [space.sample() for _ in range(6)]
    obs = TensorDict({key: torch.as_tensor(np.stack([row[key] for row in rows])) for key in ("image", "goal")}, [6])
    features = encoder(obs)
    assert features.shape == (6, 20)
    torch.testing.assert_close(features[:, :4], obs["goal"].reshape(6, 4))  # the vector entry as it is
    torch.testing.assert_close(encoder(obs.reshape(2, 3)).reshape(6, 20), features)  # any leading dimensions
    flat = image_encoder(space, "mlp")
    assert isinstance(flat, MultiInputEncoder) and flat.out_dim == 4 + 300  # encoder: mlp flattens the image too
    with pytest.raises(rlcore.ConfigError, match=r"^algo.encoder: the Dict observation's entry 'n' is Discrete\(3\); the encoder reads Box entries only"):
        image_encoder(spaces.Dict({"n": spaces.Discrete(3)}))
