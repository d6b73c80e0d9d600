// Package examples is the registry of the bundled example services, so that
// heapscope (its demo and its end-to-end tests) can start any of them by
// name:
//
//	leaky      package leakycache: a cache that never evicts (leaks)
//	optimized  package optimizedcache: its fixed twin, a bounded LRU
//	kv-naive   package naivekv: a key/value store with lock contention and per-response garbage
//	kv-tuned   package tunedkv: its tuned twin
//
// Every service answers its own routes beside /debug/pprof/, /metrics and
// /health.
package examples

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/heapscope/heapscope/examples/internal/kv"
	"github.com/heapscope/heapscope/examples/internal/service"
	"github.com/heapscope/heapscope/examples/leakycache"
	"github.com/heapscope/heapscope/examples/naivekv"
	"github.com/heapscope/heapscope/examples/optimizedcache"
	"github.com/heapscope/heapscope/examples/tunedkv"
)

// Names returns the names of the examples, in a fixed order.
func Names() []string {
	return []string{"leaky", "optimized", "kv-naive", "kv-tuned"}
}

// New returns the whole service of the named example (its routes, pprof,
// metrics and health) with every option at its default. It does not change
// process-wide settings: Main sets the mutex profile fraction, New does not.
func New(name string) (http.Handler, error) {
	e, err := lookup(name)
	if err != nil {
		return nil, err
	}
	return e.command.Handler()
}

// DefaultLoad returns the request that exercises the named example under
// load, as a method and a URL path template with heapscope's load
// placeholders ({rand:N}, {seq}) left for the load generator to expand. It
// returns two empty strings for an unknown name.
func DefaultLoad(name string) (method, urlPath string) {
	e, err := lookup(name)
	if err != nil {
		return "", ""
	}
	return e.method, e.path
}

// Program returns the named example's program name, such as
// "leakycache", and the profiles beyond heap, allocs and CPU that show
// what it is made to show: the mutex profile for the key/value stores,
// which sample mutex contention. It returns "" for an unknown name.
func Program(name string) (program string, profiles []string) {
	e, err := lookup(name)
	if err != nil {
		return "", nil
	}
	if e.command.MutexProfileFraction > 0 {
		profiles = []string{"mutex"}
	}
	return e.command.Name, profiles
}

// Main runs the command line of the named example, as its own main does:
// flags (or environment variables) in args, serving until ctx is cancelled,
// "NAME: listening on http://HOST:PORT" on stderr once listening, errors as
// one line on stderr. It returns the exit code: 0 after a graceful shutdown
// or --help, 1 when serving fails, 2 for a usage error or an unknown name.
func Main(ctx context.Context, name string, args []string, getenv func(string) string, stderr io.Writer) int {
	e, err := lookup(name)
	if err != nil {
		fmt.Fprintf(stderr, "heapscope example: %v\n", err)
		return service.ExitUsage
	}
	return e.command.Run(ctx, args, getenv, stderr)
}

// RunAndExit is the whole of an example's own main: it runs Main for the
// named example with the process's arguments, environment and stderr,
// until SIGINT or SIGTERM, then exits with Main's code.
func RunAndExit(name string) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, name, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

// Serve listens on addr (port 0 picks a free port) and serves h until ctx is
// cancelled, then shuts down gracefully. onListen, when not nil, receives the
// address bound before the first request is accepted.
func Serve(ctx context.Context, addr string, h http.Handler, onListen func(net.Addr)) error {
	return service.Serve(ctx, addr, h, onListen)
}

type example struct {
	command      service.Command
	method, path string
}

// cacheLoadPath is the cache examples' load: composite cache keys (tenant,
// user, locale, plan) drawn from 100 000 users, so that almost every request
// brings a new id. The leaky cache then grows at a steady rate, request by
// request; with few ids its growth comes in steps, as every entry doubles
// its capacity at about the same time. The optimized cache fills its
// capacity (optimizedcache.DefaultCapacity) in a few seconds and then
// evicts as fast as it adds.
const cacheLoadPath = "/process?id=tenant-42:user-{rand:100000}:locale-en-GB:plan-pro"

func lookup(name string) (example, error) {
	switch name {
	case "leaky":
		return example{
			command: service.Command{
				Name:    "leakycache",
				Addr:    "127.0.0.1:6060",
				Options: leakyOptions,
			},
			method: http.MethodGet,
			path:   cacheLoadPath,
		}, nil
	case "optimized":
		return example{
			command: service.Command{
				Name:    "optimizedcache",
				Addr:    "127.0.0.1:6061",
				Options: optimizedOptions,
			},
			method: http.MethodGet,
			path:   cacheLoadPath,
		}, nil
	case "kv-naive":
		return example{
			command: service.Command{
				Name:                 "naivekv",
				Addr:                 "127.0.0.1:6062",
				MutexProfileFraction: kvMutexProfileFraction,
				Options:              naiveOptions,
			},
			method: http.MethodGet,
			path:   "/kv/key-{rand:1000}",
		}, nil
	case "kv-tuned":
		return example{
			command: service.Command{
				Name:                 "tunedkv",
				Addr:                 "127.0.0.1:6063",
				MutexProfileFraction: kvMutexProfileFraction,
				Options:              tunedOptions,
			},
			method: http.MethodGet,
			path:   "/kv/key-{rand:1000}",
		}, nil
	}
	return example{}, fmt.Errorf("unknown example %q: valid names are %s", name, strings.Join(Names(), ", "))
}

// kvMutexProfileFraction samples 1 in 5 contention events, so that the KV
// examples' mutex profiles show their locks at little cost.
const kvMutexProfileFraction = 5

func leakyOptions(*flag.FlagSet) func() (http.Handler, error) {
	return func() (http.Handler, error) {
		return leakycache.NewHandler(leakycache.NewWorker()), nil
	}
}

func optimizedOptions(fs *flag.FlagSet) func() (http.Handler, error) {
	capacity := service.IntFlag(fs, "capacity", optimizedcache.DefaultCapacity, 1, math.MaxInt,
		"keep at most `N` ids in the cache")
	return func() (http.Handler, error) {
		w, err := optimizedcache.NewWorker(*capacity)
		if err != nil {
			return nil, err
		}
		return optimizedcache.NewHandler(w), nil
	}
}

func naiveOptions(fs *flag.FlagSet) func() (http.Handler, error) {
	return kvOptions(fs, naivekv.NewStore, naivekv.NewHandler)
}

func tunedOptions(fs *flag.FlagSet) func() (http.Handler, error) {
	return kvOptions(fs, tunedkv.NewStore, tunedkv.NewHandler)
}

// kvOptions are the KV examples' options, the same for both: --preload,
// the number of keys the store, made by newStore, starts with.
func kvOptions[S any](fs *flag.FlagSet, newStore func(preload int) (S, error), newHandler func(S) http.Handler) func() (http.Handler, error) {
	preload := service.IntFlag(fs, "preload", kv.DefaultPreload, 0, kv.MaxPreload,
		"start with `N` keys, key-0 … key-(N-1)")
	return func() (http.Handler, error) {
		s, err := newStore(*preload)
		if err != nil {
			return nil, err
		}
		return newHandler(s), nil
	}
}
