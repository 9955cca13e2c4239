"""Speed of the perception pipeline (images/second at inference on CPU) and its training wall time.

Measured on rendered images of a dataset folder (partial scenes of one split) with a trained model:

- detection + attribute network per image, with 1 and 2 torch threads (the machine has 2 cores);
- plain (argmax) decoding and constraint-aware decoding (clingo) per image;
- the training wall time, read from the model file's metadata (the detector and the attribute network
  train in two processes at once, so the run took about the longer of the two).

The first image of each setting is a warm-up and is not timed. OpenMP threads wait passively
(``OMP_WAIT_POLICY=PASSIVE``, as the perception CLI sets it): spinning threads are up to 10x slower on a
shared machine. Usage::

    python benchmarks/perception.py --dataset DIR --model models/perception [--split test] [--images 30]
        [--camera auto|from-scene|official|ours] [--device auto|cpu|cuda] [--json]

``--dataset`` may be an official-layout release (scenes without a camera: ``--camera auto`` uses the
official camera); the image size of the timed images is reported (the networks read any size).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from clevr_poc.dataset_reader import load_dataset  # noqa: E402
from clevr_poc.perception import Perception  # noqa: E402
from clevr_poc.image_files import read_rgb  # noqa: E402
from clevr_poc.perception.rendered_truth import image_truth  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--model", default="models/perception")
    parser.add_argument("--split", default="test")
    parser.add_argument("--images", type=int, default=30)
    parser.add_argument("--camera", default="auto", choices=("auto", "from-scene", "official", "ours"))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    perception = Perception.from_pretrained(args.model, device=args.device)
    examples = [e for e in load_dataset(args.dataset, split=args.split) if e.image_path is not None][:args.images + 1]
    items = []
    for e in examples:
        truth = image_truth(e.partial_scene, e.image_path, camera_source=args.camera, scene_path=e.scene_path)
        items.append((read_rgb(e.image_path), truth.camera, e.environment))
    if len(items) < 2:
        raise SystemExit("need at least 2 rendered images")
    sizes = sorted({f"{image.shape[1]}x{image.shape[0]}" for image, _, _ in items[1:]})
    result: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "torch": torch.__version__,
                    "device": str(perception.device), "images": len(items) - 1, "image_sizes": sizes,
                    "split": args.split}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        perception.detect(items[0][0], items[0][1])
        start, cpu = time.perf_counter(), time.process_time()
        detections = [perception.detect(image, camera) for image, camera, _ in items[1:]]
        wall = time.perf_counter() - start
        result[f"detect_threads_{threads}"] = {"images_per_second": round((len(items) - 1) / wall, 2),
                                               "seconds_per_image": round(wall / (len(items) - 1), 4),
                                               "cpu_seconds_per_image": round((time.process_time() - cpu)
                                                                              / (len(items) - 1), 4)}
    for name, use_env in (("decode_argmax", False), ("decode_constraints", True)):
        start = time.perf_counter()
        statuses: dict[str, int] = {}
        for (image, camera, env), dets in zip(items[1:], detections):
            scene = perception.decode(dets, camera, env if use_env else None)
            status = scene.perception.decoding
            statuses[status] = statuses.get(status, 0) + 1
        wall = time.perf_counter() - start
        result[name] = {"seconds_per_image": round(wall / (len(items) - 1), 4), "statuses": statuses}
    training = perception.metadata
    result["training"] = {"detector_seconds": round(training.get("detector_seconds", 0)),
                          "attribute_seconds": round(training.get("attribute_seconds", 0)),
                          "images": training.get("images"), "objects": training.get("objects")}
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['machine']}, torch {result['torch']} on {result['device']}, {result['images']} images of "
          f"{args.split} ({', '.join(sizes)})")
    for threads in (1, 2):
        r = result[f"detect_threads_{threads}"]
        print(f"detection + attributes, {threads} thread(s): {r['images_per_second']} images/s "
              f"({r['seconds_per_image']} s/image, {r['cpu_seconds_per_image']} CPU s/image)")
    for name in ("decode_argmax", "decode_constraints"):
        print(f"{name}: {result[name]['seconds_per_image']} s/image {result[name]['statuses']}")
    t = result["training"]
    print(f"training: detector {t['detector_seconds']} s, attribute network {t['attribute_seconds']} s "
          f"(in parallel), {t['images']} images, {t['objects']} objects")


if __name__ == "__main__":
    main()
