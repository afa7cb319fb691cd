// crio-image-load: e2e diagnostic tooling, never part of the product. Copies the one image of an
// OCI image-layout archive (test/e2e/lib/oci-image.mjs) into a containers/storage store, under a
// name, as `skopeo copy oci-archive:FILE containers-storage:[DRIVER@ROOT+RUNROOT]NAME` would.
// The Go module proxy serves no skopeo, and `rootless-k8s image load` refuses CRI-O; the crio
// scenario uses this to put the images its pods run (and the pause image, under CRI-O's default
// pause_image name too) where CRI-O looks for them. Run inside the node's user, mount and PID
// namespaces (storage re-executes /proc/self/exe).
//
//	crio-image-load --root DIR --runroot DIR --driver overlay|vfs [--opt K=V] ARCHIVE NAME
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"go.podman.io/image/v5/copy"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/signature"
	istorage "go.podman.io/image/v5/storage"
	"go.podman.io/image/v5/transports/alltransports"
	"go.podman.io/storage"
	"go.podman.io/storage/pkg/reexec"
)

type opts []string

func (o *opts) String() string     { return fmt.Sprint(*o) }
func (o *opts) Set(v string) error { *o = append(*o, v); return nil }

func main() {
	if reexec.Init() {
		return
	}
	root := flag.String("root", "", "graph root (crio.conf root)")
	runroot := flag.String("runroot", "", "run root (crio.conf runroot)")
	driver := flag.String("driver", "overlay", "storage driver (crio.conf storage_driver)")
	var driverOpts opts
	flag.Var(&driverOpts, "opt", "storage option (crio.conf storage_option), repeatable")
	flag.Parse()
	if flag.NArg() != 2 || *root == "" || *runroot == "" {
		fmt.Fprintln(os.Stderr, "usage: crio-image-load --root DIR --runroot DIR --driver D [--opt K=V] ARCHIVE NAME")
		os.Exit(2)
	}
	if err := load(*root, *runroot, *driver, driverOpts, flag.Arg(0), flag.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, "crio-image-load:", err)
		os.Exit(1)
	}
}

func load(root, runroot, driver string, driverOpts []string, archive, name string) error {
	store, err := storage.GetStore(storage.StoreOptions{GraphRoot: root, RunRoot: runroot, GraphDriverName: driver, GraphDriverOptions: driverOpts})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Shutdown(false)
	src, err := alltransports.ParseImageName("oci-archive:" + archive)
	if err != nil {
		return err
	}
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return err
	}
	dest, err := istorage.Transport.NewStoreReference(store, reference.TagNameOnly(named), "")
	if err != nil {
		return err
	}
	policy, err := signature.NewPolicyContext(&signature.Policy{Default: []signature.PolicyRequirement{signature.NewPRInsecureAcceptAnything()}})
	if err != nil {
		return err
	}
	defer policy.Destroy()
	if _, err := copy.Image(context.Background(), policy, dest, src, &copy.Options{}); err != nil {
		return fmt.Errorf("copy %s to %s: %w", archive, dest.StringWithinTransport(), err)
	}
	fmt.Printf("loaded %s as %s\n", archive, reference.TagNameOnly(named))
	return nil
}
