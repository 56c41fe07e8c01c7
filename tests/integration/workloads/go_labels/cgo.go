// Built only with cgo on (test_go_labels' cgo builds): C thread-locals in the executable put
// runtime.tlsg elsewhere than 8 bytes below the fs base.

package main

// __thread int np_tls_pad[5];
// static int np_touch(int a) { np_tls_pad[a & 3] += a; return np_tls_pad[a & 3]; }
import "C"

var _ = C.np_touch(1)
