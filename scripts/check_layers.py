#!/usr/bin/env python3
"""check_layers.py [REPO] — the one-way rule of docs/architecture.md, checked on every #include.

conveyor is built in wings, each a CMake target, whose dependencies point only down:

    train     src/train/, include/conveyor/train/                      conveyor::train
    device    src/device/, include/conveyor/cuda/                      conveyor::cuda
    service   src/service/, include/conveyor/service/                  conveyor::service
    pipeline  src/{sources,memory,observe,pipeline}/, the rest of       conveyor::data
              include/conveyor/*.h
    ops       ops/, include/conveyor/ops.h, include/conveyor/ops/,     conveyor::data
              include/conveyor/fields/, include/conveyor/{sample,fields}.h
    core      src/core/, include/conveyor/{error,image,random,batch,      conveyor::data
              batch_checksum,host_memory,version,tensor,dlpack,memory_budget,
              atomic_file,defer,ranks,mask,boxes}.h

A file may include files of its own wing and of the wings below it, never above. The service wing stands on the
data wing beside the device wing: it includes core, ops and pipeline, and neither it nor the device and training
wings include each other. The data wing (core, ops, pipeline) includes no CUDA header and the device wing none of
cuDNN, cuBLAS or NCCL; gRPC (grpcpp/, grpc/) is included by the service wing's transport files only
(src/service/transport/grpc_*), and no socket header (sys/socket.h, arpa/inet.h, netinet/in.h, poll.h) by any
file of the library: networking goes through gRPC.

The training wing picks its backend once (src/train/backend.h): CMake compiles its CUDA twins only where
CUDA is built, and no other file of src/train/ asks, so an `#if`/`#ifdef` on CUDA there is only allowed in
src/train/backend.cpp (the one factory).

Prints every violation with file and line and exits 1 when there is one; 0 and a one-line summary otherwise.
"""
import pathlib
import re
import sys

WINGS = ["core", "ops", "pipeline", "device", "train", "service"]
# What each wing may include besides itself: the wings below it. The service sits on the data wing, beside the
# device and training wings, not above them.
BELOW = {"core": set(), "ops": {"core"}, "pipeline": {"core", "ops"}, "device": {"core", "ops", "pipeline"},
         "train": {"core", "ops", "pipeline", "device"}, "service": {"core", "ops", "pipeline"}}
CORE_HEADERS = {"error.h", "image.h", "random.h", "batch.h", "batch_checksum.h", "host_memory.h", "version.h",
                "tensor.h", "dlpack.h", "memory_budget.h", "atomic_file.h", "defer.h", "ranks.h", "mask.h",
                "boxes.h"}
# A sample and its typed fields belong to the ops that move them (include/conveyor/fields/ too).
OPS_HEADERS = {"sample.h", "fields.h"}
# System headers a wing may not use: the libraries of the wings above it.
CUDA_HEADERS = re.compile(r"^(cuda[a-z_]*\.h|cuda/.*|cuda_runtime.*|cudnn.*\.h|cublas.*\.h|nccl\.h|nvjpeg\.h|"
                          r"cuda_(bf16|fp16)\.h|curand.*\.h)$")
TRAIN_ONLY_HEADERS = re.compile(r"^(cudnn.*\.h|cublas.*\.h|nccl\.h)$")
GRPC_HEADERS = re.compile(r"^(grpcpp/.*|grpc/.*|grpc\+\+/.*)$")
SOCKET_HEADERS = re.compile(r"^(sys/socket\.h|arpa/inet\.h|netinet/.*|poll\.h|sys/poll\.h|netdb\.h)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
# A preprocessor condition on whether CUDA was built (CONVEYOR_HAVE_CUDA, __CUDACC__, CUDA_VERSION, ...).
CUDA_CONDITION = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif)\b.*CUDA")
TRAIN_BACKEND_FACTORY = pathlib.Path("src/train/backend.cpp")


def wing_of(path):
    """The wing of a repository-relative path, or None for files outside the library (tests, programs)."""
    parts = path.parts
    if parts[0] == "python":
        return "python"  # the module binds every wing: only the header rules apply to it
    if parts[:2] == ("include", "conveyor"):
        rest = parts[2:]
        if rest == ("conveyor.h",):
            return "umbrella"
        if rest[0] == "cuda":
            return "device"
        if rest[0] == "train":
            return "train"
        if rest[0] == "service":
            return "service"
        if rest[0] in ("ops", "fields") or rest == ("ops.h",) or (len(rest) == 1 and rest[0] in OPS_HEADERS):
            return "ops"
        if len(rest) == 1 and rest[0] in CORE_HEADERS:
            return "core"
        return "pipeline"
    if parts[0] == "ops":
        return "ops"
    if parts[0] == "src" and len(parts) > 2:
        return {"core": "core", "sources": "pipeline", "memory": "pipeline", "observe": "pipeline",
                "pipeline": "pipeline", "device": "device", "train": "train", "service": "service"}.get(parts[1])
    return None


def target_of(include):
    """Where a quoted include points, relative to the repository."""
    if include.startswith("conveyor/"):
        return pathlib.Path("include") / include
    if include.startswith("src/service/wire/"):  # generated from src/service/wire/*.proto into the build tree
        return pathlib.Path(include)
    return pathlib.Path(include)


def main():
    repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems, checked = [], 0
    for root in ("include", "src", "ops", "python"):
        for path in sorted((repo / root).rglob("*")):
            if path.suffix not in {".h", ".cpp", ".cu", ".cuh"} or not path.is_file():
                continue
            relative = path.relative_to(repo)
            wing = wing_of(relative)
            if wing is None and relative.parts[0] != "python":
                problems.append(f"{relative}: not in any wing (see scripts/check_layers.py)")
                continue
            checked += 1
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if (wing == "train" and relative.parts[:2] == ("src", "train") and
                        relative != TRAIN_BACKEND_FACTORY and CUDA_CONDITION.match(line)):
                    problems.append(f"{relative}:{number}: the training wing asks whether CUDA was built outside "
                                    f"its backend factory ({TRAIN_BACKEND_FACTORY}): {line.strip()}")
                    continue
                match = INCLUDE.match(line)
                if not match:
                    continue
                kind, name = match.groups()
                where = f"{relative}:{number}"
                if kind == "<":
                    if SOCKET_HEADERS.match(name):
                        problems.append(f"{where}: includes the socket header <{name}>: networking goes through gRPC")
                    elif GRPC_HEADERS.match(name) and not (relative.parts[:3] == ("src", "service", "transport")
                                                           and relative.name.startswith("grpc_")):
                        problems.append(f"{where}: includes <{name}> outside the service's gRPC transport files "
                                        f"(src/service/transport/grpc_*)")
                    elif wing in ("core", "ops", "pipeline") and CUDA_HEADERS.match(name):
                        problems.append(f"{where}: the data wing includes the CUDA header <{name}>")
                    elif wing == "device" and TRAIN_ONLY_HEADERS.match(name):
                        problems.append(f"{where}: the device wing includes <{name}>, a library of the training wing")
                    continue
                if wing in ("umbrella", "python"):
                    continue
                target_wing = wing_of(target_of(name))
                if target_wing is None:
                    problems.append(f'{where}: includes "{name}", which is not in a wing of the library')
                elif target_wing == "umbrella" or (target_wing != wing and target_wing not in BELOW[wing]):
                    problems.append(f'{where}: the {wing} wing includes "{name}" of the {target_wing} wing, which is '
                                    f'not below it')
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layers: {len(problems)} violation(s) of the one-way rule (docs/architecture.md)")
        return 1
    print(f"check_layers: {checked} files, every include points down or sideways, the training wing picks its "
          f"backend in {TRAIN_BACKEND_FACTORY} only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
