"""How close the procedural ``official`` style is to renders made with the official asset files.

    python benchmarks/render_look.py --assets DATA_DIR [--scenes 20] [--samples 16] [--figure docs/images/look.png]

Renders the same random scenes (``benchmarks/render.py``'s generator, fixed seeds) twice in one process:
with ``--assets DATA_DIR`` (the official ``base_scene.blend``, shapes and node groups: the release's look)
and with the procedural ``official`` style (no files), both at the same samples, denoiser and seed, and
prints per scene and on average PSNR (dB, 8-bit RGB), SSIM (``skimage.metrics.structural_similarity``)
and the per-channel mean pixel of each. ``--style ours`` is printed beside as a baseline (another look).
Needs ``bpy`` and scikit-image (``pip install 'clevr-poc[bench-render]'``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from render import random_scene  # noqa: E402  (benchmarks/render.py)

from clevr_poc.rendering import render_scene  # noqa: E402


def _load(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """PSNR in dB of two uint8 images (inf when equal)."""
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10.0 * np.log10(255.0 ** 2 / mse)


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    from skimage.metrics import structural_similarity

    return float(structural_similarity(a, b, channel_axis=2, data_range=255))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", required=True, help="official data/ folder (base_scene.blend, shapes/, materials/)")
    parser.add_argument("--scenes", type=int, default=20)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--first-seed", type=int, default=500)
    parser.add_argument("--ours", action="store_true", help="also render --style ours as a baseline")
    parser.add_argument("--figure", default=None, help="write a side-by-side PNG (assets | procedural) here")
    parser.add_argument("--out", default=None, help="keep the images in this folder")
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="clevr_poc_look_"))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    styles = [("procedural", {"style": "official"})] + ([("ours", {"style": "ours", "width": 320, "height": 320,
                                                              "camera_jitter": 0.0, "light_jitter": 0.0})]
                                                        if args.ours else [])
    for k in range(args.scenes):
        seed = args.first_seed + k
        scene = random_scene(seed)
        real_path = out / f"{seed}_assets.png"
        render_scene(scene, real_path, seed=seed, samples=args.samples, assets=args.assets)
        real = _load(real_path)
        row = {"seed": seed, "real_mean": real.reshape(-1, 3).mean(0)}
        for name, kw in styles:
            path = out / f"{seed}_{name}.png"
            render_scene(scene, path, seed=seed, samples=args.samples, **kw)
            image = _load(path)
            row[name] = (psnr(real, image), ssim(real, image), image.reshape(-1, 3).mean(0))
        rows.append(row)
        print(f"scene {seed}: " + "  ".join(f"{name} {row[name][0]:.2f} dB SSIM {row[name][1]:.4f}" for name, _ in styles),
              flush=True)
    print(f"\n{len(rows)} scenes, {args.samples} samples + OIDN, 320 x 320; reference: --assets {args.assets}")
    print(f"  assets     mean pixel (R, G, B) {np.mean([r['real_mean'] for r in rows], axis=0).round(1)}")
    for name, _ in styles:
        p = [r[name][0] for r in rows]
        s = [r[name][1] for r in rows]
        m = np.mean([r[name][2] for r in rows], axis=0)
        print(f"  {name:10s} PSNR mean {statistics.mean(p):.2f} dB (min {min(p):.2f}, max {max(p):.2f}); "
              f"SSIM mean {statistics.mean(s):.4f} (min {min(s):.4f}); mean pixel (R, G, B) {m.round(1)}")
    if args.figure:
        from PIL import Image

        pick = rows[: min(3, len(rows))]
        sheet = Image.new("RGB", (640, 320 * len(pick)))
        for i, row in enumerate(pick):
            sheet.paste(Image.open(out / f"{row['seed']}_assets.png").convert("RGB"), (0, 320 * i))
            sheet.paste(Image.open(out / f"{row['seed']}_procedural.png").convert("RGB"), (320, 320 * i))
        sheet.save(args.figure)
        print(f"figure: {args.figure} (left: --assets, right: procedural official style)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
