"""Copies of the node binary, each with a build ID of its own: the shape of a node running many
different large programs (issue 29), for the tests of table builds (test_scale,
test_symbol_worker)."""
import shutil
import os
import struct

NODE = "/usr/bin/node"
# Busy 30 ms of every 100 ms.
BUSY_JS = "setInterval(()=>{const t=Date.now(); let x=0; while(Date.now()-t<30) x+=Math.sqrt(x+1);}, 100)"


def copy_with_build_id(src, dst, i):
    """A copy of src whose GNU build ID differs in its last 4 bytes."""
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o755)
    with open(dst, "r+b") as f:
        head = f.read(1 << 20)
        at = head.find(struct.pack("<III", 4, 20, 3) + b"GNU\0")
        if at < 0:
            raise AssertionError(f"{src}: no 20-byte GNU build ID note in its first MiB")
        f.seek(at + 16 + 16)
        f.write(struct.pack("<I", 0x7e57c0de + i))
