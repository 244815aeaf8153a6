"""_lib.py — loads liboffcore.so and declares the C API of include/offcore.h for ctypes.

Place: the bottom of the Python package; dataset.py and loader.py call through it.
Where the library comes from, first found wins:
  1. $OFFCORE_LIB (a path to liboffcore.so);
  2. liboffcore.so next to this file (``pip install ./python`` copies it there);
  3. the repository's build directory (``make`` builds build/liboffcore.so), when the
     package is used from a checkout;
  4. the system's (``cmake --install``), through ctypes.util.find_library.
Thread-safety: the declarations are immutable after import; the C rules apply (offcore.h).
Ownership: this module holds the one CDLL object for the process.
"""
import ctypes
import ctypes.util
import os

import numpy as np

MAX_LAYERS = 8
API_VERSION = 2

c_u32, c_i32, c_u64, c_dbl, c_char_p, c_void_p = (
    ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_double, ctypes.c_char_p,
    ctypes.c_void_p)


class Error(ctypes.Structure):
    _fields_ = [("status", c_i32), ("sys_errno", c_i32), ("message", ctypes.c_char * 1024)]


class DatasetInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("feat_dim", c_u32), ("n_classes", c_u32),
                ("feat_bytes", c_u32), ("n_nodes", c_u64), ("n_edges", c_u64),
                ("n_train", c_u64), ("n_val", c_u64), ("n_test", c_u64),
                ("name", ctypes.c_char * 256)]


class ImportOpts(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("format", c_char_p), ("directed", c_i32),
                ("row_normalize", c_i32), ("feat_f16", c_i32), ("name", c_char_p),
                ("mem_bytes", c_u64)]


class GenerateOpts(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("feat_dim", c_u32), ("n_classes", c_u32),
                ("n_threads", c_u32), ("n_nodes", c_u64), ("seed", c_u64),
                ("avg_degree", c_dbl), ("homophily", c_dbl), ("power_law", c_dbl),
                ("feat_signal", c_dbl), ("train_frac", c_dbl), ("val_frac", c_dbl),
                ("test_frac", c_dbl), ("feat_f16", c_i32)]


def cstr(name, v):
    """v (str, bytes or a path) as bytes for a C string: a NUL inside would cut it short
    silently in C (Dataset("/tmp\\x00x") would open /tmp), so it is refused."""
    b = os.fsencode(v) if isinstance(v, (str, bytes, os.PathLike)) else str(v).encode()
    if b"\0" in b:
        raise ValueError("offcore: %s %r contains a NUL byte" % (name, v))
    return b


def whole(name, v, lo, hi):
    """v as an int in [lo, hi]: ctypes would wrap a larger one, and int() truncate 5.9."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
        raise ValueError("offcore: %s must be a whole number from %d to %d, not %r"
                         % (name, lo, hi, v))
    return int(v)


class LoaderOpts(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("n_layers", c_u32), ("fanouts", c_i32 * MAX_LAYERS),
                ("batch_size", c_u64), ("seed", c_u64), ("shuffle", c_i32), ("split", c_i32),
                ("strategy", c_char_p), ("mem_budget_bytes", c_u64), ("n_epochs", c_u32),
                ("n_threads", c_u32), ("depth", c_u32), ("plan_dir", c_char_p),
                ("store_bytes", c_u64), ("rank", c_u32), ("world_size", c_u32)]


class CBlock(ctypes.Structure):
    _fields_ = [("n_src", c_u64), ("n_dst", c_u64), ("n_edges", c_u64),
                ("indptr", c_void_p), ("indices", c_void_p)]  # addresses: numpy views them


class CBatch(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("n_layers", c_u32), ("epoch", c_u64), ("index", c_u64),
                ("n_seeds", c_u64), ("n_input", c_u64), ("feat_dim", c_u64),
                ("input_ids", c_void_p), ("x", c_void_p),
                ("blocks", CBlock * MAX_LAYERS), ("handle", c_void_p)]


class Stats(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("n_batches_per_epoch", c_u64), ("n_sampled", c_u64),
                ("n_fetched", c_u64), ("requested_rows", c_u64), ("requested_bytes", c_u64),
                ("requested_disk_bytes", c_u64), ("read_bytes", c_u64), ("n_reads", c_u64),
                ("store_held_bytes", c_u64), ("mem_used_bytes", c_u64),
                ("mem_peak_bytes", c_u64), ("sample_busy_s", c_dbl), ("fetch_busy_s", c_dbl),
                ("wait_s", c_dbl)]


def _candidates():
    env = os.environ.get("OFFCORE_LIB")
    if env:
        return [env]  # asked for explicitly: nothing else is tried
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    out = [os.path.join(here, "liboffcore.so"), os.path.join(repo, "build", "liboffcore.so")]
    found = ctypes.util.find_library("offcore")
    if found:
        out.append(found)
    return out


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("offcore: liboffcore.so not found: build it with `make` in the offcore "
                      "repository or set OFFCORE_LIB to its path; tried " + ", ".join(tried))


lib = _load()

P = ctypes.POINTER
_decls = {
    "offcore_version": (c_char_p, []),
    "offcore_api_version": (c_u32, []),
    "offcore_status_name": (c_char_p, [ctypes.c_int]),
    "offcore_dataset_open": (ctypes.c_int, [c_char_p, P(c_void_p), P(Error)]),
    "offcore_dataset_close": (None, [c_void_p]),
    "offcore_dataset_info_init": (None, [P(DatasetInfo)]),
    "offcore_dataset_info": (ctypes.c_int, [c_void_p, P(DatasetInfo), P(Error)]),
    "offcore_dataset_dir": (c_char_p, [c_void_p]),
    "offcore_dataset_labels": (ctypes.c_int, [c_void_p, c_void_p, c_u64, P(Error)]),
    "offcore_dataset_split": (ctypes.c_int, [c_void_p, c_i32, c_void_p, c_u64, P(Error)]),
    "offcore_import_opts_init": (None, [P(ImportOpts)]),
    "offcore_import": (ctypes.c_int, [c_char_p, c_char_p, P(ImportOpts), P(Error)]),
    "offcore_generate_opts_init": (None, [P(GenerateOpts)]),
    "offcore_generate": (ctypes.c_int, [c_char_p, P(GenerateOpts), P(Error)]),
    "offcore_n_strategies": (c_u32, []),
    "offcore_strategy_name": (c_char_p, [c_u32]),
    "offcore_loader_opts_init": (None, [P(LoaderOpts)]),
    "offcore_batch_init": (None, [P(CBatch)]),
    "offcore_stats_init": (None, [P(Stats)]),
    "offcore_loader_open": (ctypes.c_int, [c_void_p, P(LoaderOpts), P(c_void_p), P(Error)]),
    "offcore_loader_close": (None, [c_void_p]),
    "offcore_loader_n_batches": (c_u64, [c_void_p]),
    "offcore_loader_max_held": (c_u32, [c_void_p]),
    "offcore_loader_labels": (c_void_p, [c_void_p, P(c_u64)]),
    "offcore_loader_epoch": (ctypes.c_int, [c_void_p, c_u64, P(Error)]),
    "offcore_loader_next": (ctypes.c_int, [c_void_p, P(CBatch), P(Error)]),
    "offcore_loader_release": (None, [c_void_p, P(CBatch)]),
    "offcore_loader_sample": (ctypes.c_int, [c_void_p, c_u64, c_u64, P(CBatch), P(Error)]),
    "offcore_loader_stats": (ctypes.c_int, [c_void_p, P(Stats), P(Error)]),
}
for _name, (_res, _args) in _decls.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

if lib.offcore_api_version() < API_VERSION:
    raise ImportError("offcore: %s has API version %d; this package needs %d (rebuild it)"
                      % (lib._name, lib.offcore_api_version(), API_VERSION))

DONE = 1


class Closable:
    """A C handle in self._h, given back by close(): by `with`, or when garbage collected."""

    _h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if self._h is not None and lib is not None:
            self.close()


class OffcoreError(Exception):
    """An error from liboffcore: `status` is the C status (offcore.h), the text its message."""

    def __init__(self, message, status=-11, name="OFFCORE_ERR_INTERNAL"):
        super().__init__(message)
        self.status = status
        self.status_name = name


class InvalidArgument(OffcoreError, ValueError):
    """A bad option, argument or state (OFFCORE_ERR_ARG)."""


class BudgetError(OffcoreError, MemoryError):
    """The memory budget is too small (OFFCORE_ERR_BUDGET)."""


class NotFound(OffcoreError, FileNotFoundError):
    """A file does not exist (OFFCORE_ERR_NOTFOUND)."""


_classes = {-6: InvalidArgument, -2: BudgetError, -7: NotFound}


def check(rc, err):
    """Raises the exception for a failed call's status and error record; returns rc otherwise."""
    if rc >= 0:
        return rc
    name = lib.offcore_status_name(rc).decode()
    msg = err.message.decode("utf-8", "replace") or name
    raise _classes.get(rc, OffcoreError)(msg, rc, name)
