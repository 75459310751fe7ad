"""Natural photos and document scans for image models, from scikit-image's bundled data.

scikit-image ships a few sample images inside its wheel (``skimage/data``; public domain or
CC0, see scikit-image's LICENSE.txt). They are read once per process and resized with
bilinear interpolation in numpy. scikit-image (and scipy with it) is an optional extra of
optfuzz, ``images`` (:data:`EXTRA`): without it, a model whose input spec asks for images
cannot be fed, and says which command installs it.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from fuzzer.errors import InputError

#: the command that installs scikit-image beside optfuzz.
EXTRA = "pip install 'optfuzz[images]'"

#: Sample sets: name -> scikit-image data functions (each returns uint8 HxW or HxWx3).
SETS: dict[str, tuple[str, ...]] = {
    "photo": ("chelsea", "astronaut", "coffee", "rocket"),
    "document": ("page", "text"),
}


@cache
def sample(name: str) -> np.ndarray:
    """The scikit-image sample ``name`` as uint8 RGB, shape ``(H, W, 3)``.

    Raises:
        AttributeError: scikit-image has no sample of that name.
        InputError: scikit-image is not installed (the message names :data:`EXTRA`).
    """
    try:
        import skimage.data
    except ImportError:
        raise InputError(f"image inputs need scikit-image, which is not installed: "
                         f"{EXTRA}") from None

    image = np.asarray(getattr(skimage.data, name)())
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    return np.ascontiguousarray(image[:, :, :3].astype(np.uint8))


def resize(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear resize of ``image`` (``(H, W, C)``, any dtype) to ``(height, width, C)`` float32."""
    src = image.astype(np.float32)
    h, w = src.shape[:2]
    ys = np.clip((np.arange(height) + 0.5) * h / height - 0.5, 0, h - 1)
    xs = np.clip((np.arange(width) + 0.5) * w / width - 0.5, 0, w - 1)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    top = src[y0][:, x0] * (1 - wx) + src[y0][:, x1] * wx
    bottom = src[y1][:, x0] * (1 - wx) + src[y1][:, x1] * wx
    return top * (1 - wy) + bottom * wy


def picture(rng: np.random.Generator, kind: str, height: int, width: int) -> np.ndarray:
    """One sample of set ``kind`` (see :data:`SETS`), chosen by ``rng``, as float32 RGB in
    [0, 255], shape ``(height, width, 3)``.

    Raises:
        KeyError: unknown set.
        InputError: scikit-image is not installed.
    """
    names = SETS[kind]
    return resize(sample(names[int(rng.integers(len(names)))]), height, width)
