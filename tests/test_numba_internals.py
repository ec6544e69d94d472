"""The prepared launch packs exactly what numba-cuda 0.30.4 would pass: checked without a GPU.

numba-cuda's real (non-simulator) modules import without a driver, so a child process with
``NUMBA_ENABLE_CUDASIM=0`` runs numba-cuda's own marshalling (``_Kernel._prepare_args``) on
device arrays that point at made-up addresses (nothing is allocated or launched), and packs
the result in cuda.core's ``ParamHolder``, the buffer ``cuda.core.launch`` hands the driver.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu.core import numba_internals as internals

ROOT = Path(__file__).resolve().parents[1]

# Runs in a child without the simulator: prints what numba-cuda and the module make of each argument.
CHILD = r"""
import ctypes, json
import numpy as np
from numba.cuda.cudadrv import driver
from numba.cuda.cudadrv.devicearray import DeviceNDArray
from numba.cuda.datamodel.cuda_models import ArrayModel
from numba.cuda.descriptor import cuda_target
from numba.cuda.dispatcher import _Kernel
from numba.cuda.typing.typeof import Purpose, typeof

from gpu.core import numba_internals as internals

def device_array(shape, strides, dtype, address):
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    memory = driver.MemoryPointer(context=None, pointer=driver.binding.CUdeviceptr(address), size=size)
    return DeviceNDArray(shape, strides, dtype, gpu_data=memory)  # no allocation: gpu_data is given

class Compiled:  # a compiled kernel as far as marshalling goes: numba-cuda's own _prepare_args
    def __init__(self, args):
        self.argument_types = tuple(typeof(a, Purpose.argument) for a in args)
        kernel = _Kernel.__new__(_Kernel)
        kernel.extensions = []
        self._prepare_args = kernel._prepare_args
        self.py_func = device_array

args = [
    device_array((1000,), (4,), np.float32, 0x7F00_0000_1000),
    device_array((3, 5), (20, 4), np.float32, 0x7F00_0000_2000),  # C order
    device_array((3, 5), (8, 24), np.float64, 0x7F00_0000_3000),  # F order, float64
    np.int32(-7),
    np.float32(2.5),
]
words = internals.kernel_arguments(Compiled(args), args, 0)
holder = internals.packed_parameters(words)
slots = (ctypes.c_void_p * len(words)).from_address(holder.ptr)
packed = []
for slot, word in zip(slots, words):
    kind = ctypes.c_int64 if isinstance(word, int) else type(word)
    packed.append(kind.from_address(slot).value)
expected = []
for a in args:
    if isinstance(a, DeviceNDArray):
        expected += internals.array_words(a.size, a.dtype.itemsize, a.device_ctypes_pointer.value, a.shape, a.strides)
    else:
        expected.append(a.item())
model = cuda_target.target_context.data_model_manager[typeof(args[0], Purpose.argument)]
print(json.dumps({
    "words": [w if isinstance(w, int) else w.value for w in words],
    "word_types": [type(w).__name__ for w in words],
    "packed": packed,
    "expected": expected,
    "model_is_array_model": isinstance(model, ArrayModel),
    "fields": list(model._fields),
}))
"""


@pytest.fixture(scope="module")
def marshalled() -> dict:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=240,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_numba_cudas_marshalling_of_device_arrays_is_the_documented_layout(marshalled):
    assert marshalled["words"] == marshalled["expected"]
    # a 1-D array is 7 words: meminfo, parent, nitems, itemsize, data, shape, strides
    assert marshalled["words"][:7] == [0, 0, 1000, 4, 0x7F00_0000_1000, 1000, 4]
    assert marshalled["words"][7:16] == [0, 0, 15, 4, 0x7F00_0000_2000, 3, 5, 20, 4]
    assert marshalled["words"][16:25] == [0, 0, 15, 8, 0x7F00_0000_3000, 3, 5, 8, 24]
    assert marshalled["word_types"][-2:] == ["c_int", "c_float"]  # scalars keep their own width


def test_the_array_layout_is_numbas_array_model(marshalled):
    assert marshalled["model_is_array_model"]
    assert tuple(marshalled["fields"]) == internals.ARRAY_FIELDS


def test_the_packed_buffer_holds_every_word_numba_cuda_would_pass(marshalled):
    assert marshalled["packed"] == marshalled["expected"]


def test_array_words_refuses_a_shape_without_its_strides():
    with pytest.raises(ValueError, match="one stride per dimension"):
        internals.array_words(4, 4, 0, (2, 2), (8,))


def test_another_numba_cuda_version_is_refused_with_both_versions_named():
    with pytest.raises(internals.UnsupportedNumbaCuda, match=r"0\.30\.4.*numba-cuda 0\.31\.0 is installed"):
        internals.require_pinned("0.31.0")
    internals.require_pinned(internals.PINNED_NUMBA_CUDA)  # the pinned one passes


def test_the_pin_is_the_version_requirements_install():
    pin = re.search(r"^numba-cuda==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    assert pin and pin[1] == internals.PINNED_NUMBA_CUDA
    assert internals.installed_version() == internals.PINNED_NUMBA_CUDA


def test_a_kernel_argument_count_mismatch_is_refused():
    class Compiled:
        argument_types = (object(),)
        py_func = test_a_kernel_argument_count_mismatch_is_refused

    with pytest.raises(ValueError, match="takes 1 arguments, 2 were given"):
        internals.kernel_arguments(Compiled(), (1, 2), 0)


def test_a_prepared_launch_calls_only_the_driver_for_its_own_arguments(monkeypatch):
    """PreparedLaunch with numba-cuda's pieces faked: the driver gets the prepared call, other arguments
    go through the fallback, and a failed launch raises."""
    from cuda.bindings import driver

    from gpu.core import launch_path

    calls: list = []
    status = [driver.CUresult.CUDA_SUCCESS]
    monkeypatch.setattr(internals, "make_context_current", lambda: calls.append("context"))
    monkeypatch.setattr(internals, "compiled_kernel", lambda kernel, args: "compiled")
    monkeypatch.setattr(internals, "kernel_arguments", lambda compiled, args, stream: [0, 0, 4, 4, 99, 4, 4])
    monkeypatch.setattr(internals, "driver_function", lambda compiled: driver.CUkernel(0x1000))
    monkeypatch.setattr(internals, "core_stream", lambda stream: type("S", (), {"handle": driver.CUstream(0x20)})())
    monkeypatch.setattr(driver, "cuLaunchKernel", lambda *call: calls.append(call) or (status[0],))
    a, b = object(), object()
    launch = launch_path.PreparedLaunch("kernel", 5, (32, 4), "stream", (a, b), lambda *args: calls.append(args))
    calls.clear()
    launch(a, b)
    (call,) = calls
    assert call[:10] == (0x1000, 5, 1, 1, 32, 4, 1, 0, 0x20, launch._params.ptr) and call[10] == 0
    calls.clear()
    other = object()
    launch(a, other)
    assert calls == [(a, other)]  # the fallback, with the arguments it was given
    status[0] = driver.CUresult.CUDA_ERROR_LAUNCH_FAILED
    with pytest.raises(RuntimeError, match="cuLaunchKernel failed"):
        launch(a, b)
    assert launch_path.launch_label(launch) == launch_path.PreparedLaunch.label


def test_a_grid_must_be_one_to_three_positive_sizes():
    from gpu.core.launch_path import _dims

    assert _dims(7) == (7, 1, 1) and _dims((2, 3)) == (2, 3, 1)
    for bad in (0, (1, 2, 3, 4), (4, -1)):
        with pytest.raises(ValueError, match="1 to 3 positive sizes"):
            _dims(bad)


def test_no_other_module_of_the_engine_reads_numba_cudas_internals():
    """What the lab reads inside numba-cuda is named in one module, so a numba-cuda upgrade is checked in one place."""
    internal = re.compile(r"cudadrv|_codelibrary|_prepare_args|_to_core_stream|_compile_pyfunc_with_fixup|"
                          r"numba\.cuda\.dispatcher|\.overloads\b|_kernel_arg_handler")
    # gpu/sim is left out: it implements numba-cuda's surface (``kernel.overloads``), it reads none of it.
    # The notebook's harness is copied verbatim into a notebook that has no lab to import: it names its one
    # internal (the driver's memset, for the L2 flush) itself.
    readers = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "gpu").rglob("*.py")
                     if internal.search(path.read_text()) and path.parent.name != "sim")
    assert readers == ["gpu/core/numba_internals.py", "gpu/notebook/harness.py"], readers
