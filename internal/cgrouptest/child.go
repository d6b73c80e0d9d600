// Package cgrouptest helps tests that need real cgroups: it creates
// cgroups (v1 memory cgroups with a limit, or cgroups under any mounted
// hierarchy) that are removed when the test ends, reads and writes their
// files, and runs an allocating child process (the test binary itself)
// inside one. Creating a cgroup takes root: without it the tests skip.
// Only tests use this package.
//
// A package whose tests start the child calls RunChild from TestMain:
//
//	func TestMain(m *testing.M) {
//		if cgrouptest.IsChild() {
//			cgrouptest.RunChild()
//		}
//		os.Exit(m.Run())
//	}
package cgrouptest

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
)

// childEnv, set in its environment, makes the test binary the allocating
// child rather than run tests.
const childEnv = "HEAPSCOPE_CGROUPTEST_CHILD"

// IsChild reports whether the test binary was started by StartAlloc as
// the allocating child.
func IsChild() bool { return os.Getenv(childEnv) != "" }

// RunChild is the allocating child: it says "ready", then for each line N
// of its stdin allocates N MiB more, writes to every page so that it is
// resident (and charged to its cgroup), and says "ok". It exits when stdin
// closes, with status 2 on a line that is not a number.
func RunChild() {
	fmt.Println("ready")
	var held [][]byte
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		mib, err := strconv.Atoi(sc.Text())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
		fmt.Println("ok")
	}
	runtime.KeepAlive(held)
	os.Exit(0)
}
