package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// TimeLayout names a run directory by its entry's time, UTC.
const TimeLayout = "20060102T150405Z"

// maxSlug bounds the readable part of a directory name.
const maxSlug = 48

// TargetSlug returns the directory name of a target's runs and bundles: its
// host and port (or the key itself when it is no URL) made safe for a file
// name, then a hash of the whole key, so that two keys never share a
// directory and a key always gets the same one.
func TargetSlug(key string) string {
	name := key
	if u, err := url.Parse(key); err == nil && u.Host != "" {
		name = u.Host
	}
	sum := sha256.Sum256([]byte(key))
	return safeName(name, "target") + "-" + hex.EncodeToString(sum[:6])
}

// triggerSlug returns the part of a bundle's directory name that says what
// fired it: "memory>=80%" gives "memory-ge-80pct".
func triggerSlug(t *Trigger) string {
	if t == nil || t.Expr == "" {
		return "bundle"
	}
	r := strings.NewReplacer(" ", "", "\t", "", ">=", "-ge-", "<=", "-le-", "!=", "-ne-", "==", "-eq-",
		">", "-gt-", "<", "-lt-", "=", "-eq-", "%", "pct")
	return safeName(r.Replace(t.Expr), "bundle")
}

// safeName keeps letters, digits, dots, dashes and underscores of s,
// replaces anything else by an underscore (a colon too: host_port) and a
// run of dashes and underscores by its first, never starts with a dot, a
// dash or an underscore, and keeps at most maxSlug bytes.
func safeName(s, empty string) string {
	var b strings.Builder
	last := byte(0)
	for i := 0; i < len(s) && b.Len() < maxSlug; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
		default:
			c = '_'
		}
		if (c == '_' || c == '-') && (last == '_' || last == '-') {
			continue
		}
		b.WriteByte(c)
		last = c
	}
	out := strings.TrimRight(strings.TrimLeft(b.String(), "._-"), "_-")
	if out == "" {
		return empty
	}
	return out
}

// entryDir returns the directory, relative to the data directory and
// without its -N suffix, where an entry goes.
func entryDir(kind Kind, target string, t time.Time, trig *Trigger) string {
	name := t.UTC().Format(TimeLayout)
	top := RunsDir
	if kind == KindBundle {
		top = BundlesDir
		name += "-" + triggerSlug(trig)
	}
	return path.Join(top, TargetSlug(target), name)
}

// place renames src to the first of dst, dst-2, dst-3… that does not
// exist, never replacing one, and returns the name taken (relative to
// root, as dst is). Both parent directories are fsync'ed afterwards, so
// that the rename outlives a power cut.
func place(root, src, dst string) (string, error) {
	parent := filepath.Join(root, filepath.FromSlash(path.Dir(dst)))
	if err := mkdirSynced(parent); err != nil {
		return "", err
	}
	for n := 1; n <= 1000; n++ {
		name := dst
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		err := renameNoReplace(src, filepath.Join(root, filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := syncDir(filepath.Dir(src)); err != nil {
			return name, err
		}
		return name, syncDir(parent)
	}
	return "", fmt.Errorf("place %s: a thousand runs of that name already", dst)
}

// mkdirSynced creates dir and its missing parents, fsync'ing the parent of
// each directory it creates.
func mkdirSynced(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirSynced(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// syncTree fsyncs every file and directory under dir, dir included: what a
// run wrote reaches the disk before the rename makes it visible.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		return syncPath(p)
	})
}

func syncDir(dir string) error { return syncPath(dir) }

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	return nil
}

// treeBytes sums the sizes of the regular files under dir.
func treeBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}

// renameChecked renames src to dst unless dst exists: a check, then a
// rename, for systems without an atomic no-replace rename.
func renameChecked(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("rename %s: %w", dst, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(src, dst)
}
