package optimizedcache

import (
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/heapscope/heapscope/examples/internal/cache"
)

// maxQueryParams mirrors net/url's default limit on the number of query
// parameters (GODEBUG urlmaxqueryparams): beyond it, url.ParseQuery parses
// nothing.
const maxQueryParams = 10000

// maxPooledBuffer is the largest buffer put back in the pool.
const maxPooledBuffer = 4 << 10

// octetStream is shared by every response; net/http does not modify header
// values in place.
var octetStream = []string{"application/octet-stream"}

// NewHandler returns the service's routes, the same as leakycache's:
//
//	GET /process?id=ID  200 with Process(ID) as application/octet-stream;
//	                    400 when id is missing, empty or longer than MaxIDLen;
//	                    405 for another method.
//
// It reads the query without building url.Values and writes the response
// from a pooled buffer, so a request for a cached id does not allocate.
func NewHandler(w *Worker) http.Handler {
	h := &handler{worker: w}
	h.buffers.New = func() any { b := make([]byte, 0, 512); return &b }
	mux := http.NewServeMux()
	mux.Handle("/process", h)
	return mux
}

type handler struct {
	worker  *Worker
	buffers sync.Pool // of *[]byte
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _ := queryValue(r.URL.RawQuery, "id")
	if cache.Reject(w, r, id) {
		return
	}

	bp := h.buffers.Get().(*[]byte)
	buf := h.worker.AppendProcess((*bp)[:0], id)
	w.Header()["Content-Type"] = octetStream
	_, _ = w.Write(buf)
	if cap(buf) <= maxPooledBuffer {
		*bp = buf
		h.buffers.Put(bp)
	}
}

// queryValue returns the first value of key in the raw query, as
// url.ParseQuery(query).Get(key) would, without building the map: pairs
// holding a semicolon or a bad escape are skipped, and a query with more than
// maxQueryParams pairs has no values. It allocates only to unescape.
func queryValue(query, key string) (string, bool) {
	if strings.Count(query, "&")+1 > maxQueryParams {
		return "", false
	}
	for query != "" {
		var pair string
		pair, query, _ = strings.Cut(query, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil || k != key {
			continue
		}
		v, err = url.QueryUnescape(v)
		if err != nil {
			continue
		}
		return v, true
	}
	return "", false
}
