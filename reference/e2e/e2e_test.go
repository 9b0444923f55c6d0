// Package e2e builds upstream's e2e binary with only the sig-api-machinery suites
// (k8s.io/kubernetes/test/e2e/apimachinery): upstream's own main (test/e2e/e2e_test.go) with
// the other SIGs' imports left out, so that the binary builds in minutes and holds the tests
// issue 55 runs (`--ginkgo.focus=sig-api-machinery`). The runner is upstream's
// `RunE2ETests` (test/e2e/e2e.go) without its suite setup, which waits for schedulable nodes
// and running system pods, and without the framework extension that checks after each test
// that every Node is ready (framework/node/init): neither server here has nodes, and the
// tests run without them or fail on their own.
//
//	go test -c -o e2e.test ./e2e      # reference/build does this
//	e2e.test --kubeconfig FILE --ginkgo.focus='\[sig-api-machinery\]'
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"k8s.io/component-base/logs"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// define and freeze constants
	_ "k8s.io/kubernetes/test/e2e/feature"

	// the tests: sig-api-machinery only
	_ "k8s.io/kubernetes/test/e2e/apimachinery"

	// reconfigure the framework, as upstream's main does
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/utils/ktesting/format"
)

func TestMain(m *testing.M) {
	var versionFlag bool
	flag.CommandLine.BoolVar(&versionFlag, "version", false, "Displays version information.")
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if versionFlag {
		fmt.Printf("%s\n", version.Get())
		os.Exit(0)
	}
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown additional command line arguments: %s", flag.CommandLine.Args())
		os.Exit(1)
	}
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

// TestE2E is upstream's RunE2ETests: logs as it sets them, failures to the framework, and
// Ginkgo's configuration from the flags.
func TestE2E(t *testing.T) {
	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "Kubernetes e2e suite", suiteConfig, reporterConfig)
}
