// Command hostile is a pprof server on 127.0.0.1 whose heap profile is
// hostile, for bench/hostile-targets.sh: every other endpoint (MemStats in
// heap?debug=1, goroutine, CPU, /metrics) is the real net/http/pprof of
// this process, so a capture gets as far as the heap profile.
//
//	hostile -mode bomb            # gzip of zeros: 4 MB that inflate to 4 GiB
//	hostile -mode samples         # a valid heap profile, one sample repeated:
//	                              # 500 KB of gzip, 200 MiB of protobuf
//	hostile -mode endless         # a body that never ends
//	hostile -mode silent          # accepts, then never answers
//	hostile -mode bomb -o FILE    # writes the profile to FILE and exits
//
// -size sets the decompressed size of a bomb or samples profile. It
// prints the base URL on its first line of standard output and serves
// until standard input closes or it is killed.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"
	"time"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
)

func main() {
	mode := flag.String("mode", "bomb", "bomb, samples, endless or silent")
	size := flag.Int64("size", 0, "decompressed size of a bomb or samples profile in bytes (default 4 GiB for bomb, 200 MiB for samples)")
	out := flag.String("o", "", "write the heap profile to this file and exit instead of serving it")
	flag.Parse()
	if err := run(*mode, *size, *out); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(2)
	}
}

func run(mode string, size int64, out string) error {
	var body []byte
	var err error
	switch mode {
	case "bomb":
		body, err = zeros(cmpOr(size, 4<<30))
	case "samples":
		body, err = samples(cmpOr(size, 200<<20))
	case "endless", "silent":
		if out != "" {
			return fmt.Errorf("mode %s has no profile to write", mode)
		}
	default:
		return fmt.Errorf("unknown mode %q: give bomb, samples, endless or silent", mode)
	}
	if err != nil {
		return err
	}
	if out != "" {
		return os.WriteFile(out, body, 0o644)
	}
	// What built the body is garbage now: the server's RSS stays small.
	runtime.GC()

	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("debug") != "" {
			pprof.Index(w, r)
			return
		}
		switch mode {
		case "endless":
			chunk := bytes.Repeat([]byte{0x1f, 0x8b, 0x08, 0}, 8<<10)
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "silent":
			<-r.Context().Done()
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(body)
		}
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); _ = srv.Close() }()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

func cmpOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// zeros gzips n zero bytes at the best compression: about n/1000 bytes.
func zeros(n int64) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	block := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(block)) {
		if _, err := zw.Write(block[:min(left, int64(len(block)))]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// samples writes this process' heap profile, then repeats its first
// sample until the protobuf is about n bytes: a valid heap profile
// (repeated fields may come in any order) that gzip shrinks about 400
// times, and that profile.Parse expands ten.
func samples(n int64) ([]byte, error) {
	var real bytes.Buffer
	if err := rpprof.Lookup("heap").WriteTo(&real, 0); err != nil {
		return nil, err
	}
	p, err := profile.Parse(&real)
	if err != nil {
		return nil, err
	}
	if len(p.Sample) == 0 {
		return nil, fmt.Errorf("the heap profile of this process has no sample")
	}
	var raw bytes.Buffer
	p.Sample = p.Sample[:1]
	if err := p.WriteUncompressed(&raw); err != nil {
		return nil, err
	}
	one := encodeSample(p.Sample[0])
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(zw, 1<<20)
	if _, err := bw.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	for left := n - int64(raw.Len()); left > 0; left -= int64(len(one)) {
		if _, err := bw.Write(one); err != nil {
			return nil, err
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeSample encodes s as field 2 of a Profile message, its location
// ids and values packed.
func encodeSample(s *profile.Sample) []byte {
	packed := func(field byte, vs []uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return append(binary.AppendUvarint([]byte{field<<3 | 2}, uint64(len(b))), b...)
	}
	var ids, vals []uint64
	for _, l := range s.Location {
		ids = append(ids, l.ID)
	}
	for _, v := range s.Value {
		vals = append(vals, uint64(v))
	}
	msg := append(packed(1, ids), packed(2, vals)...)
	return append(binary.AppendUvarint([]byte{2<<3 | 2}, uint64(len(msg))), msg...)
}
