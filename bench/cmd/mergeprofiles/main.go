// Command mergeprofiles merges pprof profiles of one type into one with
// pprofx.Merger, as the server's merge endpoint will, for
// bench/merge-vs-pprof.sh to set beside go tool pprof -proto.
//
//	mergeprofiles -o merged.pb.gz heap-*.pb.gz
//	mergeprofiles -folded alloc_space heap-*.pb.gz > merged.folded
//
// The merged profile (or, with -folded, its folded stacks for a sample
// type) goes to -o, or to standard output. -cpuprofile and -memprofile
// write profiles of the merge itself.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/heapscope/heapscope/internal/pprofx"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mergeprofiles:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout io.Writer) (err error) {
	fs := flag.NewFlagSet("mergeprofiles", flag.ContinueOnError)
	out := fs.String("o", "", "file to write to (default: standard output)")
	folded := fs.String("folded", "", "write folded stacks of this sample type instead of a profile (\"\" is a profile; \"default\" the default type)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the merge to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the merge to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: mergeprofiles [-o FILE] [-folded SAMPLE] PROFILE...")
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 4096
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	m := pprofx.NewMerger(pprofx.MergeOptions{})
	for _, path := range fs.Args() {
		if err := add(m, path); err != nil {
			return err
		}
	}

	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if *folded != "" {
		name := *folded
		if name == "default" {
			name = ""
		}
		i, err := m.SampleIndex(name)
		if err != nil {
			return err
		}
		err = m.WriteFolded(bw, i)
	} else {
		err = m.WriteProfile(bw)
	}
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if *memProfile != "" {
		if err := writeHeap(*memProfile); err != nil {
			return err
		}
	}
	return nil
}

func add(m *pprofx.Merger, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return m.Add(path, f)
}

func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
