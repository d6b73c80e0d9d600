package escape

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// ModulePath returns the module path that dir/go.mod declares.
func ModulePath(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("read module path of %s: not a Go module root: %w", dir, err)
	}
	mp := modfile.ModulePath(data)
	if mp == "" {
		return "", fmt.Errorf("read module path of %s: go.mod has no module line", dir)
	}
	return mp, nil
}

// Site is a place in the service that a finding points at, as a profile
// names it.
type Site struct {
	// Package is the import path of the function's package
	// (pprofx.PackagePath); "main" for a command.
	Package string
	// File is the source file: an absolute path of the machine that
	// built the binary, or a module path under -trimpath.
	File string
}

// Patterns returns the packages of module that hold the sites, as go build
// patterns relative to the module's root: "./rel/path", or "." for the
// root package; sorted, each once. Sites outside the module are left out.
// A command's package ("main") is found by its file: a -trimpath path
// under the module path, or an absolute path under root (the module's
// directory on this machine, empty when unknown); one found neither way is
// left out. Passing these to Analyze compiles only what the findings need.
func Patterns(module, root string, sites []Site) []string {
	root = filepath.ToSlash(root)
	var out []string
	for _, s := range sites {
		pkg := s.Package
		if pkg == "main" {
			pkg = commandPackage(module, root, filepath.ToSlash(s.File))
		}
		var p string
		switch {
		case pkg == "":
			continue
		case pkg == module:
			p = "."
		case strings.HasPrefix(pkg, module+"/"):
			p = "./" + strings.TrimPrefix(pkg, module+"/")
		default:
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// commandPackage returns the import path of the package main that holds
// file, or "" when file is not in the module.
func commandPackage(module, root, file string) string {
	dir := path.Dir(file)
	switch {
	case dir == module || strings.HasPrefix(dir, module+"/"):
		return dir
	case root != "" && path.IsAbs(dir) && dir == root:
		return module
	case root != "" && path.IsAbs(dir) && strings.HasPrefix(dir, strings.TrimSuffix(root, "/")+"/"):
		return module + "/" + strings.TrimPrefix(dir, strings.TrimSuffix(root, "/")+"/")
	}
	return ""
}
