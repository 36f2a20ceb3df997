// Command pause is the sandbox ("pause") container of the dra-conformance local cluster.
//
// It holds the pod's namespaces open: it blocks until SIGINT or SIGTERM (then exits 0) and, as PID 1 of
// the pod, reaps orphaned children on SIGCHLD. Behaviour follows the upstream pause container
// (kubernetes/build/pause); this is our own minimal Go version, built with CGO_ENABLED=0 into a static
// binary and packed into an OCI image by conformance/clusters/local/images.py.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const version = "dra-conformance-pause 1"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println(version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "warning: pause should be the first process")
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			for {
				var status syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		fmt.Fprintf(os.Stderr, "shutting down, got signal %v\n", sig)
		os.Exit(0)
	}
}
