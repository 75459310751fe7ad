"""Speech-like and noise signals for audio models (float32 in [-1, 1])."""

from __future__ import annotations

import numpy as np


def speech(rng: np.random.Generator, samples: int, rate: int = 16000) -> np.ndarray:
    """A voiced, speech-like signal of ``samples`` samples at ``rate`` Hz, float32, peak 0.5.

    Source-filter model: a glottal pulse train (f0 100-220 Hz with slow vibrato), harmonics
    weighted by three formant peaks (F1 300-800 Hz, F2 900-2200 Hz, F3 2400-3000 Hz), a 3-6 Hz
    syllable envelope with pauses, and breath noise 30 dB below.
    """
    t = np.arange(samples, dtype=np.float64) / rate
    f0 = rng.uniform(100, 220) * (1 + 0.03 * np.sin(2 * np.pi * rng.uniform(3, 6) * t))
    phase = 2 * np.pi * np.cumsum(f0) / rate
    formants = (rng.uniform(300, 800), rng.uniform(900, 2200), rng.uniform(2400, 3000))
    signal = np.zeros(samples)
    for k in range(1, int(min(4000, rate / 2) // f0.mean())):
        freq = k * f0.mean()
        gain = sum(np.exp(-((freq - f) / 150.0) ** 2) for f in formants) + 0.02
        signal += gain / k * np.sin(k * phase)
    syllables = np.clip(np.sin(2 * np.pi * rng.uniform(3, 6) * t + rng.uniform(0, 6)), 0, None)
    signal = signal * syllables + 0.03 * rng.standard_normal(samples)
    peak = float(np.max(np.abs(signal))) or 1.0
    return (0.5 * signal / peak).astype(np.float32)


def noise(rng: np.random.Generator, samples: int, rate: int = 16000) -> np.ndarray:
    """White noise at -20 dBFS (standard deviation 0.1), float32, ``samples`` samples."""
    del rate
    return np.clip(0.1 * rng.standard_normal(samples), -1, 1).astype(np.float32)


#: signal kind -> generator ``(rng, samples, rate) -> float32 array``.
SIGNALS = {"speech": speech, "noise": noise}
