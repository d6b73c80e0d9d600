package load

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// serverEnv makes the test binary serve as the benchmarks' target: a
// minimal JSON server in a process of its own, so that the benchmarks
// measure the client's CPU and allocations alone.
const serverEnv = "HEAPSCOPE_LOAD_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		serveJSON()
		return
	}
	goleak.VerifyTestMain(m)
}

// serveJSON serves a small JSON document on 127.0.0.1 until stdin closes,
// after printing its address.
func serveJSON() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	http.Serve(ln, http.HandlerFunc(jsonHandler))
}

// jsonHandler is the minimal JSON service the benchmarks and the
// comparison with wrk drive.
func jsonHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "path": r.URL.Path})
}
