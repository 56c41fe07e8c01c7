"""Helpers shared by the integration tests: where the binary is, running it, building
small C workloads, temporary directories. Standard library only."""
import os
import random
import shutil
import socket
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODEPROF = os.path.join(ROOT, "build", "nodeprof")
EXAMPLES = os.path.join(ROOT, "docs", "examples")  # the example configurations tests run


def nodeprof(*args, timeout=120, check=False, input=None, env=None):
    """Runs build/nodeprof with args; returns CompletedProcess (text mode)."""
    p = subprocess.run([NODEPROF, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                       input=input, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"nodeprof {' '.join(map(str, args))} exited {p.returncode}:\n{p.stderr}")
    return p


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now, below the kernel's ephemeral
    range: a port the kernel hands out by itself (bind to port 0) is also what the next
    outgoing connection of any test may take as its local port, and a server started on it a
    moment later then fails with "address already in use"."""
    low = _ephemeral_low()
    for _ in range(200):
        port = random.randrange(10000, max(10001, low))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free TCP port found in 10000-{low}")


def tmpdir(test):
    """A temporary directory removed when the test ends."""
    d = tempfile.mkdtemp(prefix="nodeprof-test-")
    test.addCleanup(shutil.rmtree, d, True)
    return d


def default_config_file(directory, symb_cache_path):
    """The embedded default configuration (`run --print-default-config`) with pyroscope.ebpf's
    symb_cache_path set, written to directory/run.alloy: its path."""
    cfg = subprocess.run([NODEPROF, "run", "--print-default-config"], capture_output=True, text=True,
                         check=True).stdout
    head = 'pyroscope.ebpf "host" {'
    assert head in cfg, cfg
    cfg = cfg.replace(head, f'{head}\n  symb_cache_path = "{symb_cache_path}"', 1)
    path = os.path.join(directory, "run.alloy")
    with open(path, "w") as f:
        f.write(cfg)
    return path


def compile_c(test, source, name="workload", flags=("-O0", "-fno-omit-frame-pointer", "-g"), libs=()):
    """Compiles a C source string with gcc; returns the path of the executable."""
    d = tmpdir(test)
    src = os.path.join(d, name + ".c")
    with open(src, "w") as f:
        f.write(source)
    out = os.path.join(d, name)
    subprocess.run(["gcc", *flags, "-o", out, src, *libs], check=True, capture_output=True)
    return out


WORKLOADS = os.path.join(ROOT, "tests", "integration", "workloads")


def build_workload(name, outdir, flags=("-O0", "-fno-omit-frame-pointer", "-g")):
    """Compiles tests/integration/workloads/NAME.c into outdir; returns the executable's path."""
    out = os.path.join(outdir, name)
    subprocess.run(["gcc", *flags, "-o", out, os.path.join(WORKLOADS, name + ".c")], check=True,
                   capture_output=True)
    return out


def parse_folded(text):
    """{"a;b;c": count} from folded output."""
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        out[stack] = out.get(stack, 0) + int(count)
    return out


def contains_run(frames, run):
    """True when the list `run` appears as consecutive items of `frames`."""
    n = len(run)
    return any(frames[i:i + n] == run for i in range(len(frames) - n + 1))


def process_pipeline_config(cmdline_regex, service_name, ebpf_args, forward_url=None):
    """An Alloy configuration that profiles the processes whose command line matches
    cmdline_regex as service_name: discovery.process, a keep rule, pyroscope.ebpf with a 2 s
    interval at 97 Hz plus ebpf_args ({name: Alloy value text}), and a pyroscope.write to
    forward_url when one is given (else nothing is forwarded). A dict value is a block
    ({"debug_info": {"upload": "true"}})."""
    args = "".join(f"  {k} = {v}\n" if not isinstance(v, dict) else
                   f"  {k} {{\n" + "".join(f"    {bk} = {bv}\n" for bk, bv in v.items()) + "  }\n"
                   for k, v in ebpf_args.items())
    fwd = "[pyroscope.write.w.receiver]" if forward_url else "[]"
    write = f'pyroscope.write "w" {{\n  endpoint {{\n    url = "{forward_url}"\n  }}\n}}\n' if forward_url else ""
    return f"""discovery.process "p" {{
  refresh_interval = "1s"
}}
discovery.relabel "r" {{
  targets = discovery.process.p.targets
  rule {{
    source_labels = ["__meta_process_commandline"]
    regex = "{cmdline_regex}"
    action = "keep"
  }}
  rule {{
    target_label = "service_name"
    replacement = "{service_name}"
  }}
}}
pyroscope.ebpf "e" {{
  targets = discovery.relabel.r.output
  forward_to = {fwd}
  collect_interval = "2s"
  sample_rate = 97
{args}}}
{write}"""
