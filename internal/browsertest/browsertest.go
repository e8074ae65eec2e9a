// Package browsertest starts the headless chromium that the console's
// browser tests drive (Debian's chromium through chromedp). Only tests
// import it.
package browsertest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Path finds chromium on PATH.
func Path() (string, error) { return exec.LookPath("chromium") }

// Options are the allocator's options for a headless chromium at path,
// with its profile in dir, kept off the network: with none, it would wait
// on lookups.
func Options(path, dir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1200, 900),
	}
}

// Unavailable ends a test that has no browser (err says why): it fails
// under CI, where .ci/run installs chromium, and is skipped elsewhere.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("the console's browser tests need chromium under CI: %v", err)
	}
	t.Skipf("no browser: %v", err)
}
