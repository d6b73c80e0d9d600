// Package location says which store a command reads or writes: the
// embedded store of a data directory (--data), or the shared store of a
// fleet, a PostgreSQL database and an S3-compatible bucket (--postgres
// and --objects), and opens it.
package location

import (
	"context"
	"errors"
	"os"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
)

// Location is a store's place, as the command line gives it.
type Location struct {
	// Data is the embedded store's directory.
	Data string
	// Postgres is the shared store's database URL; $HEAPSCOPE_POSTGRES
	// when the flag is not given.
	Postgres string
	// Objects is the shared store's bucket, s3://BUCKET[/PREFIX][?…];
	// $HEAPSCOPE_OBJECTS when the flag is not given.
	Objects string
	// Cache is where the shared store keeps the runs it downloads.
	Cache string
}

// Flag is one of the command-line flags that name a store: the command
// adds it as a string flag.
type Flag struct {
	Name, Usage string
	Value       *string
}

// Flags are --data, --postgres, --objects and --cache, bound to l; data
// says what --data is for.
func (l *Location) Flags(data string) []Flag {
	return []Flag{
		{"data", data, &l.Data},
		{"postgres", "shared store: PostgreSQL `URL` (postgres://user@host/db; the password from PGPASSWORD or ~/.pgpass), with --objects; or $HEAPSCOPE_POSTGRES", &l.Postgres},
		{"objects", "shared store: bucket `URL` s3://BUCKET[/PREFIX][?endpoint=URL&region=R] (credentials from the AWS environment), with --postgres; or $HEAPSCOPE_OBJECTS", &l.Objects},
		{"cache", "shared store: `DIR` of the runs read back (default: the user's cache directory)", &l.Cache},
	}
}

// Given says whether a store was named at all: --data, or the shared
// store's flags or environment.
func (l Location) Given() bool { return l.Data != "" || l.Shared() }

// Shared says whether the location is a shared store.
func (l Location) Shared() bool { return l.resolve().Postgres != "" || l.resolve().Objects != "" }

// resolve fills the shared store's place from the environment when the
// flags did not give it and --data did not either.
func (l Location) resolve() Location {
	if l.Data == "" {
		if l.Postgres == "" {
			l.Postgres = os.Getenv("HEAPSCOPE_POSTGRES")
		}
		if l.Objects == "" {
			l.Objects = os.Getenv("HEAPSCOPE_OBJECTS")
		}
	}
	return l
}

// Open opens the store; existing refuses a data directory or database
// that holds no store yet, and never migrates a shared store's schema
// (the readers: a typo is not a new, empty store).
func (l Location) Open(ctx context.Context, existing bool) (store.Store, error) {
	l = l.resolve()
	switch {
	case l.Data != "" && (l.Postgres != "" || l.Objects != ""):
		return nil, errors.New("give --data DIR (one machine's store) or --postgres and --objects (a fleet's), not both")
	case l.Data != "" && existing:
		return store.OpenExisting(l.Data)
	case l.Data != "":
		return store.Open(l.Data)
	case l.Postgres == "" && l.Objects == "":
		return nil, errors.New("--data DIR is required (or --postgres URL and --objects URL for a shared store)")
	case l.Postgres == "":
		return nil, errors.New("--objects needs --postgres: the shared store's index is in PostgreSQL")
	case l.Objects == "":
		return nil, errors.New("--postgres needs --objects: the shared store's runs are in a bucket")
	}
	o, err := shared.ParseObjects(l.Objects)
	if err != nil {
		return nil, err
	}
	return shared.Open(ctx, shared.Options{Postgres: l.Postgres, Objects: o, CacheDir: l.Cache, Existing: existing})
}
