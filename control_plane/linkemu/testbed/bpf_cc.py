"""linkemu's own TCP congestion controls, written in BPF (bpf/, built into
build/ by `make build`), registered with the kernel while a network needs them.

A registration is a BPF link this process holds: when the process ends, by
any signal, the kernel closes its file descriptors and drops the
registration, so a killed run leaves nothing registered and nothing to clean.
A control another live process has registered already (the kernel refuses a
second of one name) is used as it is and left to that process.
"""

import ctypes
import errno
import os
from contextlib import ExitStack, contextmanager
from pathlib import Path

BUILD = Path(__file__).resolve().parents[3] / "build"
CONTROLS = ("reno_classic",)
KERNEL_BTF = Path("/sys/kernel/btf/vmlinux")
LIBBPF = "libbpf.so.1"
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
BPF_F_LINK = 1 << 13          # include/uapi/linux/bpf.h
BPF_STRUCT_OPS = 44           # enum bpf_attach_type


class BpfCcError(OSError):
    """A congestion control that could not be registered."""


def object_path(name):
    return BUILD / f"{name}.bpf.o"


def available():
    return AVAILABLE.read_text().split()


def missing(name):
    """What this machine lacks to register control `name`, root aside; None
    if nothing that can be seen without trying (the kernel may still refuse
    it)."""
    if not object_path(name).exists():
        return (f"build/{object_path(name).name} is missing: run 'make build' "
                "(it needs clang and bpftool: make setup)")
    if not KERNEL_BTF.exists():
        return f"the kernel has no BTF ({KERNEL_BTF}), which struct_ops needs"
    try:
        _libbpf()
    except OSError:
        return f"{LIBBPF} is missing (Debian: libbpf1)"
    return None


def _libbpf():
    lib = ctypes.CDLL(LIBBPF, use_errno=True)
    lib.bpf_object__open_file.restype = ctypes.c_void_p
    lib.bpf_object__open_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    lib.bpf_object__load.argtypes = [ctypes.c_void_p]
    lib.bpf_object__close.argtypes = [ctypes.c_void_p]
    lib.bpf_object__find_map_by_name.restype = ctypes.c_void_p
    lib.bpf_object__find_map_by_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.bpf_map__set_map_flags.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.bpf_map__map_flags.argtypes = [ctypes.c_void_p]
    lib.bpf_map__map_flags.restype = ctypes.c_uint32
    lib.bpf_map__fd.argtypes = [ctypes.c_void_p]
    lib.bpf_map__attach_struct_ops.restype = ctypes.c_void_p
    lib.bpf_map__attach_struct_ops.argtypes = [ctypes.c_void_p]
    lib.bpf_link__fd.argtypes = [ctypes.c_void_p]
    lib.bpf_link__destroy.argtypes = [ctypes.c_void_p]
    lib.bpf_link_create.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    return lib


def _failed(what, name, code):
    return BpfCcError(f"{what} {object_path(name)}: {os.strerror(code)} (libbpf's messages "
                      "above say more)")


@contextmanager
def _registration(name):
    """Registers `name` for the block; yields False if another process had
    registered it already (then it is theirs, and stays)."""
    lib = _libbpf()
    obj = lib.bpf_object__open_file(str(object_path(name)).encode(), None)
    if not obj:
        raise _failed("cannot open", name, ctypes.get_errno())
    try:
        ops = lib.bpf_object__find_map_by_name(obj, name.encode())
        if not ops:
            raise BpfCcError(f"{object_path(name)} defines no map {name}")
        # A map with BPF_F_LINK is registered by a link, and only while the link is open.
        lib.bpf_map__set_map_flags(ops, lib.bpf_map__map_flags(ops) | BPF_F_LINK)
        code = lib.bpf_object__load(obj)
        if code < 0:
            raise _failed("the kernel did not load", name, -code)
        link = lib.bpf_map__attach_struct_ops(ops)
        if not link:
            code = ctypes.get_errno()
            if code == errno.EEXIST:
                yield False
                return
            raise _failed("cannot register", name, code)
        try:
            if lib.bpf_link__fd(link) != lib.bpf_map__fd(ops):
                yield True   # libbpf 1.2+ made the link
                return
            # libbpf before 1.2 only writes the map (its "link" is the map):
            # the link that registers the control is made here.
            fd = lib.bpf_link_create(lib.bpf_map__fd(ops), 0, BPF_STRUCT_OPS, None)
            if fd < 0:
                if -fd == errno.EEXIST:
                    yield False
                    return
                raise _failed("cannot register", name, -fd)
            try:
                yield True
            finally:
                os.close(fd)
        finally:
            lib.bpf_link__destroy(link)
    finally:
        lib.bpf_object__close(obj)


def _allow(name):
    """Lets namespaces other than the first make `name` their default
    (the kernel drops the permission with the registration)."""
    allowed = ALLOWED.read_text().split()
    if name not in allowed:
        ALLOWED.write_text(" ".join(allowed + [name]))


@contextmanager
def registered(users):
    """Registers the controls `users` names ({control: who needs it, for
    messages}) for the block; yields {control: whether this process owns its
    registration}."""
    owned = {}
    with ExitStack() as stack:
        for name, user in users.items():
            problem = missing(name)
            if problem is None and os.geteuid() != 0:
                problem = "registering a congestion control needs root"
            try:
                if problem:
                    raise BpfCcError(problem)
                owned[name] = stack.enter_context(_registration(name))
                _allow(name)
            except OSError as err:
                raise BpfCcError(f"{user} names congestion control {name}, which cannot be "
                                 f"registered: {err}") from None
        yield owned
