package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agyharness/agyharness/hostcluster"
)

// clusterCommand holds the cluster's setup verbs: today, certs.
func clusterCommand() *command {
	c := &command{
		name:     "cluster",
		synopsis: "cluster certs --out DIR --node NAME=HOST[,HOST...] [--node ...] [--days N] [--force]",
		summary:  "make the CA and node certificates of serve --cluster's mutual TLS",
		example: `agyharness cluster certs --out ./cluster-certs --node a=10.0.0.5 --node b=10.0.0.6
# on node a (copy ca.pem, a.pem and a-key.pem to it):
agyharness serve --cluster prod --node a --advertise 10.0.0.5:7430 \
  --remote-tls-cert a.pem --remote-tls-key a-key.pem --remote-tls-ca ca.pem ...`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		fs := newFlagSet(e, c)
		out := fs.String("out", "", "directory to write ca.pem, ca-key.pem and NAME.pem, NAME-key.pem per node (made 0700; keys 0600)")
		days := fs.Int("days", 730, "how long the certificates are valid, in days")
		force := fs.Bool("force", false, "replace files that exist (a new CA: every node needs its new certificate)")
		var nodes []hostcluster.CertNode
		fs.Func("node", "NAME=HOST[,HOST...]: a node and the host(s) the others dial it by, its --advertise host (repeat per node)", func(v string) error {
			name, hosts, ok := strings.Cut(v, "=")
			if !ok || name == "" || hosts == "" {
				return fmt.Errorf("%q: want NAME=HOST", v)
			}
			nodes = append(nodes, hostcluster.CertNode{Name: name, Hosts: splitList(hosts)})
			return nil
		})
		pos, err := parseFlags(fs, args)
		if err != nil {
			return err
		}
		if len(pos) == 0 || pos[0] != "certs" {
			return usagef("cluster: want the verb certs (agyharness cluster certs --out DIR --node NAME=HOST ...)")
		}
		if len(pos) > 1 {
			return usagef("cluster certs: unexpected argument %q", pos[1])
		}
		if *out == "" || len(nodes) == 0 {
			return usagef("cluster certs: give --out DIR and at least one --node NAME=HOST")
		}
		if *days < 1 || *days > 36500 {
			return usagef("cluster certs: --days: 1 to 36500")
		}
		ca, files, err := hostcluster.WriteCerts(*out, nodes, time.Duration(*days)*24*time.Hour, *force)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "CA: %s (its key %s: keep it off the nodes)\n", ca, filepath.Join(*out, hostcluster.CAKeyFile))
		for _, f := range files {
			fmt.Fprintf(e.stdout, "node %s: --remote-tls-cert %s --remote-tls-key %s --remote-tls-ca %s\n", f.Node, f.Cert, f.Key, ca)
		}
		return nil
	}
	return c
}
