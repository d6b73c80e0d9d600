package pprofx

import "strings"

// PackagePath returns the import path of the package a function belongs
// to, from the function's name as profiles give it:
// "example.com/m/cache.(*W).Process" gives "example.com/m/cache",
// "main.main.func1" gives "main". Type arguments of generic functions are
// left out, and the linker's escaping of dots in the last element of the
// path ("gopkg.in/yaml%2ev3.Marshal") is undone. A name without a package
// comes back as it is.
func PackagePath(function string) string {
	name := function
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	slash := strings.LastIndexByte(name, '/')
	dot := strings.IndexByte(name[slash+1:], '.')
	if dot < 0 {
		return name
	}
	return strings.ReplaceAll(name[:slash+1+dot], "%2e", ".")
}
