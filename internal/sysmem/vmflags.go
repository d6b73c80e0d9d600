package sysmem

import "strings"

// VMFlags is the set of kernel flags of a mapping, the "VmFlags:" line of
// /proc/PID/smaps, one bit per two-letter code. Codes this package does not
// know are dropped.
type VMFlags uint64

// The VmFlags codes, as documented in the kernel's
// Documentation/filesystems/proc.rst, in that order.
const (
	FlagRead        VMFlags = 1 << iota // rd: readable
	FlagWrite                           // wr: writeable
	FlagExec                            // ex: executable
	FlagShared                          // sh: shared
	FlagMayRead                         // mr: may read
	FlagMayWrite                        // mw: may write
	FlagMayExec                         // me: may execute
	FlagMayShare                        // ms: may share
	FlagGrowsDown                       // gd: stack segment grows down
	FlagPurePFN                         // pf: pure PFN range
	FlagDenyWrite                       // dw: disabled write to the mapped file
	FlagLocked                          // lo: pages are locked in memory
	FlagIO                              // io: memory mapped I/O area
	FlagSeqRead                         // sr: sequential read advise provided
	FlagRandRead                        // rr: random read advise provided
	FlagDontCopy                        // dc: do not copy area on fork
	FlagDontExpand                      // de: do not expand area on remapping
	FlagAccount                         // ac: area is accountable
	FlagNoReserve                       // nr: swap space is not reserved for the area
	FlagHugeTLB                         // ht: area uses huge tlb pages
	FlagSyncFault                       // sf: synchronous page fault
	FlagNonLinear                       // nl: non-linear mapping
	FlagArch                            // ar: architecture specific flag
	FlagWipeOnFork                      // wf: wipe on fork
	FlagDontDump                        // dd: do not include area into core dump
	FlagSoftDirty                       // sd: soft dirty flag
	FlagMixedMap                        // mm: mixed map area
	FlagHugePage                        // hg: huge page advise flag
	FlagNoHugePage                      // nh: no huge page advise flag
	FlagMergeable                       // mg: mergeable advise flag
	FlagUffdMissing                     // um: userfaultfd missing tracking
	FlagUffdWP                          // uw: userfaultfd wr-protect tracking
	FlagShadowStack                     // ss: shadow/guarded control stack page
	FlagSealed                          // sl: sealed
	flagEnd
)

// flagCode returns the bit of a two-letter VmFlags code, or 0.
func flagCode(code []byte) VMFlags {
	switch string(code) {
	case "rd":
		return FlagRead
	case "wr":
		return FlagWrite
	case "ex":
		return FlagExec
	case "sh":
		return FlagShared
	case "mr":
		return FlagMayRead
	case "mw":
		return FlagMayWrite
	case "me":
		return FlagMayExec
	case "ms":
		return FlagMayShare
	case "gd":
		return FlagGrowsDown
	case "pf":
		return FlagPurePFN
	case "dw":
		return FlagDenyWrite
	case "lo":
		return FlagLocked
	case "io":
		return FlagIO
	case "sr":
		return FlagSeqRead
	case "rr":
		return FlagRandRead
	case "dc":
		return FlagDontCopy
	case "de":
		return FlagDontExpand
	case "ac":
		return FlagAccount
	case "nr":
		return FlagNoReserve
	case "ht":
		return FlagHugeTLB
	case "sf":
		return FlagSyncFault
	case "nl":
		return FlagNonLinear
	case "ar":
		return FlagArch
	case "wf":
		return FlagWipeOnFork
	case "dd":
		return FlagDontDump
	case "sd":
		return FlagSoftDirty
	case "mm":
		return FlagMixedMap
	case "hg":
		return FlagHugePage
	case "nh":
		return FlagNoHugePage
	case "mg":
		return FlagMergeable
	case "um":
		return FlagUffdMissing
	case "uw":
		return FlagUffdWP
	case "ss":
		return FlagShadowStack
	case "sl":
		return FlagSealed
	}
	return 0
}

// parseVMFlags parses the value of a VmFlags line: two-letter codes
// separated by blanks.
func parseVMFlags(b []byte) VMFlags {
	var f VMFlags
	for {
		var code []byte
		code, b = nextField(b)
		if len(code) == 0 {
			return f
		}
		f |= flagCode(code)
	}
}

// String returns the flags as the kernel prints them, two-letter codes
// separated by spaces, in the kernel's order.
func (f VMFlags) String() string {
	const codes = "rdwrexshmrmwmemsgdpfdwloiosrrrdcdeacnrhtsfnlarwfddsdmmhgnhmgumuwsssl"
	var sb strings.Builder
	for i := 0; VMFlags(1)<<i < flagEnd; i++ {
		if f&(1<<i) == 0 {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(codes[2*i : 2*i+2])
	}
	return sb.String()
}
