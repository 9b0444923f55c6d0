// Package step is what the client programs share: the server's configuration from a
// kubeconfig named on the command line, and steps that print "ok STEP" or
// "FAIL STEP: WHY" (then the program exits 1), which apfkit-differential reads.
package step

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config reads `--kubeconfig FILE [--context NAME]` from the command line (a flag set of
// its own: controller-runtime registers `kubeconfig` on the global one) and answers the
// configuration of that server; usage is printed when the kubeconfig is missing.
func Config(usage string) *rest.Config {
	flags := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "", "the kubeconfig of the server")
	kubeContext := flags.String("context", "", "the kubeconfig's context (default: its current one)")
	_ = flags.Parse(os.Args[1:])
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "usage:", usage)
		os.Exit(2)
	}
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: *kubeContext},
	).ClientConfig()
	if err != nil {
		Fail("kubeconfig", err)
	}
	return config
}

// Run runs one step: "ok STEP" when check holds, else Fail.
func Run(name string, check func() error) {
	if err := check(); err != nil {
		Fail(name, err)
	}
	fmt.Println("ok", name)
}

// cleanups run before Fail exits, last registered first.
var cleanups []func()

// OnFail registers cleanup to run if a step fails (os.Exit skips deferred calls).
func OnFail(cleanup func()) {
	cleanups = append(cleanups, cleanup)
}

// Fail prints "FAIL STEP: WHY", runs the cleanups registered and exits 1.
func Fail(name string, err error) {
	fmt.Printf("FAIL %s: %v\n", name, err)
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	os.Exit(1)
}
