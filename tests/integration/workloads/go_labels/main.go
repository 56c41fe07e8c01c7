// The Go labels workload (tests/integration/test_go_labels.py): "two" (default) runs two goroutines
// spinning under pprof.Do with different labels, workA under worker=alpha,tier=gold and workB
// under worker=beta; "many" workA under 15 labels and workB under a key and a value longer than
// the reader keeps (bpf/go_labels.h). It spins until killed.
package main

import (
	"context"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

func spin(d time.Duration) int {
	x := 0
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for i := 0; i < 100000; i++ {
			x += i * i
		}
	}
	return x
}

//go:noinline
func workA() int { return spin(time.Hour) }

//go:noinline
func workB() int { return spin(time.Hour) }

func main() {
	mode := "two"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	if mode == "many" {
		// workA: more labels than the reader keeps; workB: a key and a value longer than its room.
		var kv []string
		for i := 0; i < 15; i++ {
			kv = append(kv, "k"+strconv.Itoa(i+10), "v"+strconv.Itoa(i))
		}
		go pprof.Do(context.Background(), pprof.Labels(kv...), func(context.Context) { workA() })
		pprof.Do(context.Background(), pprof.Labels("a_very_long_label_key_name", strings.Repeat("x", 100), "short", "v"),
			func(context.Context) { workB() })
		return
	}
	go pprof.Do(context.Background(), pprof.Labels("worker", "alpha", "tier", "gold"), func(context.Context) { workA() })
	pprof.Do(context.Background(), pprof.Labels("worker", "beta"), func(context.Context) { workB() })
}
