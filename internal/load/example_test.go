package load_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/heapscope/heapscope/internal/load"
)

func ExampleParseRequest() {
	r, err := load.ParseRequest("POST http://127.0.0.1:8080/items/{rand:1000}")
	fmt.Println(r.Method, r.URL, err)

	_, err = load.ParseRequest("GET 127.0.0.1:8080/items")
	fmt.Println(err)
	// Output:
	// POST http://127.0.0.1:8080/items/{rand:1000} <nil>
	// parse request "GET 127.0.0.1:8080/items": URL "127.0.0.1:8080/items": not absolute, want http://HOST/… or https://HOST/…
}

func ExampleTemplate_Expand() {
	t, err := load.CompileTemplate("http://127.0.0.1:8080/items/{rand:100}?n={seq}")
	if err != nil {
		fmt.Println(err)
		return
	}
	rnd := rand.New(rand.NewPCG(1, 0))
	var buf []byte
	for seq := range uint64(3) {
		buf = t.Expand(buf[:0], seq, rnd)
		fmt.Println(string(buf))
	}
	// Output:
	// http://127.0.0.1:8080/items/59?n=0
	// http://127.0.0.1:8080/items/8?n=1
	// http://127.0.0.1:8080/items/71?n=2
}

func ExampleHistogram() {
	var h load.Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	s := h.Summary()
	fmt.Println(s.Min, s.Mean, s.P50, s.P99, s.Max)
	// Output:
	// 1ms 500.5ms 501.219328ms 994.050048ms 1s
}
