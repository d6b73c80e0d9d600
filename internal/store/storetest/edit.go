package storetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/store"
)

// CommitEdited captures a fixture as Commit does, with its result.json
// changed by edit first (when edit is not nil): a fixture's capture of a
// service that found nothing (edit drops its findings), or other figures.
func CommitEdited(t testing.TB, s store.Store, kind store.Kind, target, fixture string, e store.Entry, edit func(*result.Run)) store.Entry {
	t.Helper()
	p, err := s.Begin(kind, target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abandon()
	WriteFixture(t, fixture, p.Dir())
	if edit != nil {
		editResult(t, p.Dir(), edit)
	}
	out, err := p.Commit(p.Dir(), e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// editResult rewrites dir's result.json as edit changes it.
func editResult(t testing.TB, dir string, edit func(*result.Run)) {
	t.Helper()
	path := filepath.Join(dir, result.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r result.Run
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	edit(&r)
	if data, err = json.Marshal(&r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
