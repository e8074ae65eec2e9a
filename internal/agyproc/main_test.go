package agyproc_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv switches the test binary into a child process that listens on
// loopback, prints its port, and exits when its stdin closes; discovery
// tests start it to own a listener in a descendant process.
const helperEnv = "AGYPROC_TEST_LISTEN_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		runListenChild()
		return
	}
	goleak.VerifyTestMain(m)
}

func runListenChild() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	// Block until the parent closes our stdin.
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	l.Close()
	os.Exit(0)
}
