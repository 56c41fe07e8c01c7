// A minimal kube-apiserver stand-in speaking HTTP/2 (Go's net/http negotiates h2 over
// TLS like the real apiserver), to check that discovery works over HTTP/2 streams and
// that enable_http2 = false keeps it on HTTP/1.1. Standard library only.
//
// It serves one pod in the list (resourceVersion 10), then in every watch one ADDED pod
// and BOOKMARKs every 100 ms until timeoutSeconds. Each request is printed on stdout as
// "request <proto> <path>?<query>"; the first line is "listening <url>".
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

func pod(name, ip, rv string) map[string]any {
	return map[string]any{
		"kind": "Pod", "apiVersion": "v1",
		"metadata": map[string]any{"name": name, "namespace": "h2", "uid": "uid-" + name, "resourceVersion": rv},
		"spec":     map[string]any{"nodeName": "n1", "containers": []any{map[string]any{"name": "c", "image": "img"}}},
		"status":   map[string]any{"phase": "Running", "podIP": ip},
	}
}

func main() {
	cert := flag.String("cert", "", "server certificate")
	key := flag.String("key", "", "server key")
	token := flag.String("token", "", "accepted bearer token")
	flag.Parse()

	http.HandleFunc("/api/v1/pods", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("request %s %s?%s\n", r.Proto, r.URL.Path, r.URL.RawQuery)
		os.Stdout.Sync()
		if r.Header.Get("Authorization") != "Bearer "+*token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		if r.URL.Query().Get("watch") == "" {
			p := pod("h2-a", "10.3.0.1", "10")
			delete(p, "kind")
			delete(p, "apiVersion")
			enc.Encode(map[string]any{"kind": "PodList", "apiVersion": "v1",
				"metadata": map[string]any{"resourceVersion": "10"}, "items": []any{p}})
			return
		}
		timeout, _ := strconv.Atoi(r.URL.Query().Get("timeoutSeconds"))
		deadline := time.Now().Add(time.Duration(timeout) * time.Second)
		flusher := w.(http.Flusher)
		enc.Encode(map[string]any{"type": "ADDED", "object": pod("h2-b", "10.3.0.2", "11")})
		flusher.Flush()
		for time.Now().Before(deadline) {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{"kind": "Pod", "apiVersion": "v1",
				"metadata": map[string]any{"resourceVersion": "12"}}})
			flusher.Flush()
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening https://%s\n", ln.Addr())
	os.Stdout.Sync()
	fmt.Fprintln(os.Stderr, http.ServeTLS(ln, nil, *cert, *key))
	os.Exit(1)
}
