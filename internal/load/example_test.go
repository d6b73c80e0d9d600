package load_test

import (
	"fmt"
	"strings"
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
	t, err := load.CompileTemplate("http://127.0.0.1:8080/items/{rand:100}?n={seq}", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var buf []byte
	for seq := range uint64(3) {
		buf = t.Expand(buf[:0], seq, 1)
		fmt.Println(string(buf))
	}
	// Output:
	// http://127.0.0.1:8080/items/25?n=0
	// http://127.0.0.1:8080/items/33?n=1
	// http://127.0.0.1:8080/items/50?n=2
}

func ExampleSchedule() {
	// 100 requests per second, reached over a 2s ramp.
	s := load.Schedule{Rate: 100, Ramp: 2 * time.Second}
	for _, i := range []uint64{1, 25, 100, 101} {
		fmt.Printf("request %d at %s\n", i, s.At(i))
	}
	fmt.Println(s.Count(3*time.Second), "requests in 3s")
	// Output:
	// request 1 at 200ms
	// request 25 at 1s
	// request 100 at 2s
	// request 101 at 2.01s
	// 200 requests in 3s
}

func ExampleParseTargets() {
	targets := `GET /items/{seq}
X-Tenant: 42

# creates an item
POST http://127.0.0.1:8080/items
Content-Type: application/json
`
	reqs, err := load.ParseTargets(strings.NewReader(targets), load.Request{URL: "http://127.0.0.1:8080"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range reqs {
		fmt.Println(r.Method, r.URL, r.Header)
	}
	// Output:
	// GET http://127.0.0.1:8080/items/{seq} map[X-Tenant:[42]]
	// POST http://127.0.0.1:8080/items map[Content-Type:[application/json]]
}
