"""Rendering speed (and quality): seconds per image with the defaults vs the official CLEVR-POC settings.

    python benchmarks/render.py                       # defaults on 6 scenes + official settings on 2
    python benchmarks/render.py --quality             # + PSNR/SSIM vs 512-sample references per setting
    python benchmarks/render.py --quality --style ours  # the same for our former look
    python benchmarks/render.py --eevee               # + EEVEE (software OpenGL when there is no GPU)
    python benchmarks/render.py --figures docs/images # + the pictures of docs/rendering.md
    python benchmarks/render.py --assets DATA_DIR     # + the official asset files' path, as a ratio to the defaults

Needs ``bpy`` (``pip install 'clevr-poc[render]'``). Scenes: 5-9 objects with random attributes placed
uniformly in their regions (no overlap, every object visible), fixed seeds. Times are wall clock of
``render_scene`` (Blender scene build + render + PNG + masks), the first render of the process excluded
as a warm-up (Cycles loads its kernels then; printed separately). Official settings (CLEVR-POC release,
CLEVR's ``render_images.py``): 320 x 320, 512 samples, Cycles, no denoiser, no adaptive sampling
(Blender 2.78 had neither). CPU seconds (all threads of this process) are printed beside wall clock:
they depend much less on other processes sharing the machine; the load average is printed too.

``--quality``: ``--quality-images`` scenes (default 6) in the chosen style, each rendered at 512 samples
without denoiser or adaptive sampling (the reference; cached in ``--reference-cache``, default
``/tmp/clevr_poc_render_refs``, except the first ``--fresh-references`` ones, rendered in this run so
that the ratio to 512 samples is measured in the same process) and at each candidate setting; PSNR
(dB) and SSIM (``skimage.metrics.structural_similarity``, 8-bit RGB) against the reference, averaged
over the scenes, with seconds per image and the speed-up over 512 samples.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from clevr_poc import domain
from clevr_poc.rendering import check_visibility, render_scene
from clevr_poc.rendering.render import DEFAULT_SAMPLES
from clevr_poc.rendering.styles import STYLE_NAMES, get_style
from clevr_poc.scene import Scene, SceneObject, compute_relationships

OFFICIAL = {"width": 320, "height": 320, "samples": 512, "denoise": False, "adaptive": False}


#: Candidate settings of ``--quality``: (samples, OpenImageDenoise).
CANDIDATES = ((4, True), (8, True), (16, True), (32, True), (8, False), (32, False), (128, False))


def random_scene(seed: int, n: int | None = None, style: str = "official") -> Scene:
    """A scene of 5-9 random objects, each inside its region, no two closer than their radii + 0.3."""
    rng = random.Random(seed)
    n = n or rng.randint(5, 9)
    while True:
        objects: list[SceneObject] = []
        placed: list[tuple[float, float, float]] = []
        for _ in range(n):
            size = rng.choice(domain.SIZES)
            r = domain.SIZE_RADIUS[size]
            for _ in range(100):
                region = rng.choice(domain.REGIONS)
                box = domain.REGION_BOXES[region]
                x, y = rng.uniform(box.x_min + r, box.x_max - r), rng.uniform(box.y_min + r, box.y_max - r)
                if all(math.hypot(x - a, y - b) > r + c + 0.3 for a, b, c in placed):
                    break
            else:
                break
            placed.append((x, y, r))
            objects.append(SceneObject(rng.choice(domain.COLORS), rng.choice(domain.SHAPES), size,
                                       rng.choice(domain.MATERIALS), region, (x, y, 0.0),
                                       rotation=rng.uniform(0, 360)))
        if len(objects) < n:
            continue
        scene = Scene(tuple(objects), compute_relationships([(o.coords_3d[0], o.coords_3d[1]) for o in objects]),
                      image_filename=f"bench_{seed}.png")
        if check_visibility(scene, seed=seed, style=style).ok:
            return scene


def time_renders(scenes, out: Path, tag: str, **settings) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds (all threads of this process) per image."""
    times, cpu = [], []
    for k, scene in enumerate(scenes):
        start, start_cpu = time.perf_counter(), time.process_time()
        render_scene(scene, out / f"{tag}_{k}.png", seed=k, **settings)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        print(f"  {tag} scene {k}: {times[-1]:.2f} s wall, {cpu[-1]:.2f} s CPU", flush=True)
    return times, cpu


def _rgb(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"), dtype=float)


def psnr(a_path: Path, b_path: Path) -> float:
    a, b = _rgb(a_path), _rgb(b_path)
    mse = float(((a - b) ** 2).mean())
    return float("inf") if mse == 0 else 10 * math.log10(255 ** 2 / mse)


def ssim(a_path: Path, b_path: Path) -> float:
    """SSIM of two 8-bit RGB images (scikit-image, Gaussian-free 7x7 windows, mean over channels)."""
    from skimage.metrics import structural_similarity

    return float(structural_similarity(_rgb(a_path), _rgb(b_path), channel_axis=2, data_range=255.0))


def load_average() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # pragma: no cover
        return "n/a"


def quality(style: str, n: int, out: Path, cache: Path, fresh: int) -> None:
    """The ``--quality`` table (module doc)."""
    import json

    try:
        import skimage  # noqa: F401
    except ImportError:
        print("--quality needs scikit-image for SSIM: pip install scikit-image", file=sys.stderr)
        return
    st = get_style(style)
    scenes = [random_scene(200 + k, style=style) for k in range(n)]
    cache.mkdir(parents=True, exist_ok=True)
    print(f"\nquality, style {style} at {st.width}x{st.height}, {n} scenes, vs 512 samples (no denoiser, no "
          f"adaptive sampling); load average {load_average()}")
    references, ref_wall, ref_cpu = [], [], []
    for k, scene in enumerate(scenes):
        path = cache / f"{style}_{st.width}x{st.height}_scene{200 + k}_512.png"
        meta = path.with_suffix(".json")
        if k < fresh or not (path.exists() and meta.exists()):
            start, start_cpu = time.perf_counter(), time.process_time()
            render_scene(scene, path, style=style, seed=k, samples=512, denoise=False, adaptive=False)
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            meta.write_text(json.dumps({"wall": wall, "cpu": cpu, "load": load_average()}))
            ref_wall.append(wall)
            ref_cpu.append(cpu)
            print(f"  reference {k}: {wall:.1f} s wall, {cpu:.1f} s CPU (rendered now)", flush=True)
        references.append(path)
    if not ref_wall:
        print("  (every reference from the cache: no 512-sample timing in this run; use --fresh-references 1)")
    ref_mean_wall = statistics.mean(ref_wall) if ref_wall else float("nan")
    ref_mean_cpu = statistics.mean(ref_cpu) if ref_cpu else float("nan")
    print(f"  512 samples: {ref_mean_wall:.1f} s wall, {ref_mean_cpu:.1f} s CPU per image "
          f"({len(ref_wall)} rendered in this run)")
    print("  setting              PSNR dB   SSIM     s/image wall   s/image CPU   speed-up vs 512 (CPU)")
    for samples, denoise in CANDIDATES:
        values, walls, cpus = [], [], []
        for k, scene in enumerate(scenes):
            path = out / f"quality_{style}_{samples}_{'oidn' if denoise else 'raw'}_{k}.png"
            start, start_cpu = time.perf_counter(), time.process_time()
            render_scene(scene, path, style=style, seed=k, samples=samples, denoise=denoise)
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - start_cpu)
            values.append((psnr(path, references[k]), ssim(path, references[k])))
        label = f"{samples:4d} spp{' + OIDN' if denoise else '       '}"
        print(f"  {label:18s} {statistics.mean(v[0] for v in values):7.2f}  {statistics.mean(v[1] for v in values):.4f}"
              f"  {statistics.mean(walls):10.2f}  {statistics.mean(cpus):12.2f}  "
              f"{ref_mean_cpu / statistics.mean(cpus):10.1f}x", flush=True)
    print(f"  load average at the end: {load_average()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=6, help="scenes rendered with the defaults")
    parser.add_argument("--official-images", type=int, default=2, help="scenes rendered with official settings")
    parser.add_argument("--style", default="official", choices=STYLE_NAMES, help="render style (default: official)")
    parser.add_argument("--quality", action="store_true", help="PSNR/SSIM vs 512-sample references per setting")
    parser.add_argument("--quality-images", type=int, default=6, help="scenes of --quality (default 6)")
    parser.add_argument("--fresh-references", type=int, default=1,
                        help="references rendered in this run even when cached (default 1)")
    parser.add_argument("--reference-cache", type=Path, default=Path("/tmp/clevr_poc_render_refs"),
                        help="folder of cached 512-sample references")
    parser.add_argument("--skip-speed", action="store_true", help="only --quality (no default/official timing)")
    parser.add_argument("--eevee", action="store_true", help="also time EEVEE")
    parser.add_argument("--figures", type=Path, default=None, help="write the docs pictures to this folder")
    parser.add_argument("--keep", type=Path, default=None, help="keep the renders in this folder")
    parser.add_argument("--assets", type=Path, default=None,
                        help="also time render --assets DATA_DIR (the official files) on the same scenes")
    parser.add_argument("--assets-quality", action="store_true",
                        help="with --assets: PSNR/SSIM of the assets path at the default samples vs 512 samples "
                             "with the official settings, both with the files")
    args = parser.parse_args(argv)
    try:
        import bpy  # noqa: F401
    except ImportError:
        print("benchmarks/render.py needs bpy: pip install 'clevr-poc[render]'", file=sys.stderr)
        return 1
    out = args.keep or Path(tempfile.mkdtemp(prefix="clevr_poc_render_bench_"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"CPUs: {len(os.sched_getaffinity(0))}; load average {load_average()}; renders in {out}")
    if args.images < 1 or args.official_images < 0 or args.quality_images < 1:
        parser.error("--images and --quality-images must be >= 1 and --official-images >= 0")
    st = get_style(args.style)
    scenes = [random_scene(100 + k, style=args.style) for k in range(max(args.images, args.official_images, 2))]

    start = time.perf_counter()
    render_scene(scenes[0], out / "warmup.png", seed=0, style=args.style)
    print(f"warm-up render (kernel loading): {time.perf_counter() - start:.2f} s")
    if args.skip_speed:
        if args.quality:
            quality(args.style, args.quality_images, out, args.reference_cache, args.fresh_references)
        return 0

    print(f"defaults: style {args.style}, {st.width}x{st.height}, {DEFAULT_SAMPLES} samples, Cycles + OpenImageDenoise")
    default_times, default_cpu = time_renders(scenes[:args.images], out, "default", style=args.style)
    default_mean = statistics.mean(default_times)
    print(f"\nseconds per image, defaults: {default_mean:.2f} wall (min {min(default_times):.2f}, "
          f"max {max(default_times):.2f}, {len(default_times)} images), {statistics.mean(default_cpu):.2f} CPU")
    if args.official_images:
        print("official: 320x320, 512 samples, Cycles, no denoiser, no adaptive sampling")
        official_times, official_cpu = time_renders(scenes[:args.official_images], out, "official", style=args.style,
                                                    **OFFICIAL)
        official_mean = statistics.mean(official_times)
        print(f"seconds per image, official settings: {official_mean:.2f} wall ({len(official_times)} images), "
              f"{statistics.mean(official_cpu):.2f} CPU")
        print(f"ratio official / defaults: {official_mean / default_mean:.1f}x wall, "
              f"{statistics.mean(official_cpu) / statistics.mean(default_cpu):.1f}x CPU")
        print("(CPU seconds are less sensitive than wall clock to other processes sharing the machine)")

    if args.assets is not None:
        render_scene(scenes[0], out / "warmup_assets.png", seed=0, assets=args.assets)  # reads the files once
        print(f"\n--assets {args.assets}: the official files, {DEFAULT_SAMPLES} samples + OIDN (files read once per "
              "process; the first render above did it)")
        assets_times, assets_cpu = time_renders(scenes[:args.images], out, "assets", assets=args.assets)
        print(f"seconds per image, --assets: {statistics.mean(assets_times):.2f} wall, "
              f"{statistics.mean(assets_cpu):.2f} CPU; ratio --assets / procedural {args.style}: "
              f"{statistics.mean(assets_times) / default_mean:.2f}x wall, "
              f"{statistics.mean(assets_cpu) / statistics.mean(default_cpu):.2f}x CPU (load average {load_average()})")
        if args.assets_quality:
            values = []
            for k, scene in enumerate(scenes[:args.images]):
                reference = out / f"assets_512_{k}.png"
                render_scene(scene, reference, seed=k, assets=args.assets, **OFFICIAL)
                values.append((psnr(out / f"assets_{k}.png", reference), ssim(out / f"assets_{k}.png", reference)))
            print(f"--assets at {DEFAULT_SAMPLES} samples + OIDN vs 512 samples (official settings), "
                  f"{len(values)} scenes: PSNR {statistics.mean(v[0] for v in values):.2f} dB, "
                  f"SSIM {statistics.mean(v[1] for v in values):.4f}")

    if args.quality:
        quality(args.style, args.quality_images, out, args.reference_cache, args.fresh_references)

    if args.eevee:
        print("\nEEVEE (same scenes, 16 anti-aliasing samples):")
        eevee_times, eevee_cpu = time_renders(scenes[:2], out, "eevee", engine="eevee", samples=16)
        print(f"  seconds per image, EEVEE: {statistics.mean(eevee_times):.1f} wall, {statistics.mean(eevee_cpu):.1f} "
              f"CPU (the first includes shader compilation)")

    if args.figures:
        make_figures(scenes, out, args.figures, eevee=args.eevee, style=args.style, reference_cache=args.reference_cache)
    return 0


def palette_scene() -> Scene:
    """Every colour in both materials as small objects (two front rows: rubber, then metal) and a back row
    of medium objects; to check by eye that colours and materials stay distinguishable."""
    shapes = ("sphere", "cube", "cylinder", "cone")
    objects = []
    for i, color in enumerate(domain.COLORS):
        for j, material in enumerate(domain.MATERIALS):
            objects.append(SceneObject(color, shapes[i % 4], "small", material, 0,
                                       (-4.2 + 1.2 * i, -3.2 + 1.6 * j + 0.2 * i, 0.0), rotation=20.0))
    for i, color in enumerate(domain.COLORS):
        objects.append(SceneObject(color, shapes[(i + 1) % 4], "medium", domain.MATERIALS[i % 2], 0,
                                   (-4.2 + 1.2 * i, 2.3 + 0.2 * i, 0.0), rotation=35.0))
    return Scene(tuple(objects))


def make_figures(scenes, out: Path, folder: Path, *, eevee: bool, style: str = "official",
                 reference_cache: Path = Path("/tmp/clevr_poc_render_refs")) -> None:
    """docs pictures: example renders (complete/partial pairs) and the engine comparison (its sample-count
    panels need ``--quality`` in the same run)."""
    st = get_style(style)
    from PIL import Image, ImageDraw

    folder.mkdir(parents=True, exist_ok=True)

    def labelled(path: Path, label: str) -> Image.Image:
        image = Image.open(path).convert("RGB")
        ImageDraw.Draw(image).text((4, 4), label, fill=(255, 255, 255))  # the official sky is black
        return image

    def row(images: list[Image.Image]) -> Image.Image:
        canvas = Image.new("RGB", (sum(i.width for i in images) + 4 * (len(images) - 1), max(i.height for i in images)),
                           (255, 255, 255))
        x = 0
        for image in images:
            canvas.paste(image, (x, 0))
            x += image.width + 4
        return canvas

    # complete vs partial (the hidden object is absent; same camera and lights)
    pairs = []
    for k in (0, 1):
        scene = scenes[k]
        hidden = len(scene.objects) - 1
        complete, partial = out / f"fig_complete_{k}.png", out / f"fig_partial_{k}.png"
        render_scene(scene, complete, seed=k, style=style)
        render_scene(scene.without_object(hidden), partial, seed=k, style=style)
        pairs += [labelled(complete, "complete"), labelled(partial, f"partial (object {hidden} hidden)")]
    row(pairs[:2]).save(folder / "rendering_complete_partial_0.png")
    row(pairs[2:]).save(folder / "rendering_complete_partial_1.png")
    # several default renders
    row([Image.open(out / f"default_{k}.png") for k in range(min(3, len(scenes))) if (out / f"default_{k}.png").exists()]).save(
        folder / "rendering_examples.png")
    # palette: colours x materials, small and medium, shown at 2x
    render_scene(palette_scene(), out / "fig_palette.png", seed=0, camera_jitter=0, light_jitter=0, style=style)
    palette = Image.open(out / "fig_palette.png").convert("RGB")
    palette = palette.resize((2 * palette.width, 2 * palette.height), Image.LANCZOS)
    ImageDraw.Draw(palette).text((6, 6), "small objects (front rows: rubber, then metal), medium ones behind; "
                                 f"{st.width}x{st.height} shown at 2x", fill=(255, 255, 255))
    palette.save(folder / "rendering_palette.png")
    # the two styles, same scene and seed
    render_scene(scenes[0], out / "fig_style_ours.png", seed=0, style="ours")
    render_scene(scenes[0], out / "fig_style_official.png", seed=0, style="official")
    row([labelled(out / "fig_style_official.png", "style official (default), 320x320"),
         labelled(out / "fig_style_ours.png", "style ours, 320x240")]).save(folder / "rendering_styles.png")
    # engines / sample counts side by side
    default = out / f"quality_{style}_{DEFAULT_SAMPLES}_oidn_0.png"
    panels = [labelled(default if default.exists() else out / "default_0.png", f"Cycles {DEFAULT_SAMPLES} spp + OIDN")]
    other = 16 if DEFAULT_SAMPLES != 16 else 8   # the other sample count the docs compare
    if (out / f"quality_{style}_{other}_oidn_0.png").exists():
        panels.append(labelled(out / f"quality_{style}_{other}_oidn_0.png", f"Cycles {other} spp + OIDN"))
    reference = reference_cache / f"{style}_{st.width}x{st.height}_scene200_512.png"
    if default.exists() and reference.exists():
        panels.append(labelled(reference, "Cycles 512 spp (official settings)"))
    if eevee:
        panels.append(labelled(out / "eevee_0.png", "EEVEE 16 samples"))
    row(panels).save(folder / "rendering_engines.png")
    print(f"figures written to {folder}")


if __name__ == "__main__":
    sys.exit(main())
