package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// cbreak is a terminal put in cbreak mode (keys arrive one by one, not
// echoed; Ctrl-C still signals) by stty, which spares a terminal library.
type cbreak struct {
	tty   *os.File
	saved string // stty -g: the settings to restore
	rows  int    // the terminal's height, 0 when unknown
}

// enterCbreak puts tty in cbreak mode; restore undoes it.
func enterCbreak(tty *os.File) (*cbreak, error) {
	if tty == nil {
		return nil, fmt.Errorf("no terminal on stdin")
	}
	saved, err := stty(tty, "-g")
	if err != nil {
		return nil, fmt.Errorf("stdin is not a terminal (stty -g: %w)", err)
	}
	if _, err := stty(tty, "-icanon", "-echo", "min", "1"); err != nil {
		return nil, fmt.Errorf("stty: %w", err)
	}
	c := &cbreak{tty: tty, saved: strings.TrimSpace(saved)}
	if size, err := stty(tty, "size"); err == nil {
		if f := strings.Fields(size); len(f) == 2 {
			c.rows, _ = strconv.Atoi(f[0])
		}
	}
	return c, nil
}

func (c *cbreak) restore() { _, _ = stty(c.tty, c.saved) }

func stty(tty *os.File, args ...string) (string, error) {
	cmd := exec.Command("stty", args...)
	cmd.Stdin = tty
	out, err := cmd.Output()
	if err != nil {
		return "", err
	}
	return string(out), nil
}
