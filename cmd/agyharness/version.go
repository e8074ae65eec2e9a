package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

func versionCommand() *command {
	c := &command{
		name:     "version",
		synopsis: "version",
		summary:  "print agyharness's module version and the Go version",
		example:  "agyharness version",
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		fs := newFlagSet(e, c)
		pos, err := parseFlags(fs, args)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return usagef("version: takes no arguments")
		}
		version, module := "(devel)", "github.com/agyharness/agyharness"
		var revision string
		if bi, ok := debug.ReadBuildInfo(); ok {
			module = bi.Main.Path
			if bi.Main.Version != "" {
				version = bi.Main.Version
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					revision = s.Value
				}
			}
		}
		fmt.Fprintf(e.stdout, "agyharness %s (%s", version, module)
		if revision != "" {
			fmt.Fprintf(e.stdout, ", commit %.12s", revision)
		}
		fmt.Fprintf(e.stdout, ") %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	}
	return c
}
