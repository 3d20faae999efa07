# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_nfs_gds_global_optspecs
    string join \n root= config= v/verbose color= h/help V/version
end

function __fish_nfs_gds_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_nfs_gds_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_nfs_gds_using_subcommand
    set -l cmd (__fish_nfs_gds_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -s V -l version -d 'Print version'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "check" -d 'Run the pre-mount checks for this node, as the mount helper would'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "inspect-module" -d 'Show what a kernel module file really contains (hooks, exports, identity)'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "doctor" -d 'Explain what is wrong on this node and how to fix it for its stack'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "provision" -d 'Print doctor\'s plan, or with --apply run its safe, idempotent steps'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "collect" -d 'Write a support bundle of everything doctor reads (replay it with --root)'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "agent" -d 'Publish readiness for fleets: NFD labels, Prometheus textfile, status JSON'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "mount" -d 'Mount over NFS/RDMA as the mount(8) helper does (exit codes are mount(8)\'s)'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "verify" -d 'Run the post-mount checks for an existing mount'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "watch" -d 'Watch a mount while a workload runs: did nvidia-fs move the bytes it served?'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "oci-hook" -d 'OCI runtime hook: refuse a container whose NFS volume meant for GDS is not ready (state on stdin)'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "policy" -d 'Validate a policy file, or show the level of every check for a mount'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "lint" -d 'Check Kubernetes manifests (ClusterPolicy, NicClusterPolicy, NFS StorageClass/PV) for GDS'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "completions" -d 'Print a shell completion script (e.g. `nfs-gds completions bash`)'
complete -c nfs-gds -n "__fish_nfs_gds_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand check" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand check" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand check" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand check" -l json -d 'Print the result as JSON (schema in the README)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand check" -l probe -d 'Also run the live registration probe: open /dev/nvidia-fs0 and see whether rpcrdma registers its hooks with nvidia-fs (the close may block about 1 s)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand check" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand inspect-module" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand inspect-module" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand inspect-module" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand inspect-module" -l json -d 'Print the result as JSON'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand inspect-module" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand inspect-module" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand doctor" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand doctor" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand doctor" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand doctor" -l probe -d 'Also run the live registration probe (opens /dev/nvidia-fs0; the close may block ~1 s)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand doctor" -l json -d 'Print the diagnosis as JSON'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand doctor" -l markdown -d 'Print the diagnosis as Markdown, for pasting into a ticket'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand doctor" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand provision" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand provision" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand provision" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand provision" -l apply -d 'Run the steps marked as safe (module loads, DKMS rebuild, depmod, initramfs, reload of an unused rpcrdma); without it, only print the plan'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand provision" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand provision" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand collect" -s o -l output -d 'Where to write the archive (gzip-compressed tar)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand collect" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand collect" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand collect" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand collect" -l force -d 'Replace FILE when it exists already'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand collect" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand collect" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l interval -d 'Seconds between checks (with --once: between runs of the timer); labels expire after three' -r
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l nfd-dir -d 'NFD features.d directory [default: <root>/etc/kubernetes/node-feature-discovery/features.d, used only if it exists]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l textfile-dir -d 'node_exporter textfile directory [default: <root>/var/lib/prometheus/node-exporter, used only if it exists]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l status-file -d 'Where to write the status JSON [default: <root>/run/nfs-gds/status.json]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l ready-file -d 'The file that exists while the node is ready, for init containers [default: <root>/run/nfs-gds/ready]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l once -d 'Check once, write the outputs, and exit (0 ready, 1 not ready, 2 error); run from a timer, pass its period as --interval so the labels outlive the gap between runs'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l probe -d 'Also run the live registration probe (opens /dev/nvidia-fs0; needs the device)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -l health -d 'Check nothing: exit 0 when the running agent\'s last pass (the time of its status file) is at most two intervals old, 1 otherwise (the DaemonSet\'s liveness and readiness probe)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand agent" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand mount" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand mount" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand mount" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand mount" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand verify" -l port -d 'The port the mount must use [default: the port the helper recorded for it, else `port` in `[options]` of the policy, else 20049]' -r
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand verify" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand verify" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand verify" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand verify" -l json -d 'Print the result as JSON (the same schema as `check --json`)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand verify" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand watch" -l seconds -d 'How long to watch, while the workload runs' -r
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand watch" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand watch" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand watch" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand watch" -l json -d 'Print the result as JSON'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand watch" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand watch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand oci-hook" -l hooks-dir -d 'The hooks directory --install and --uninstall use, below the root [default: /usr/share/containers/oci/hooks.d, which CRI-O and podman read unless their hooks_dir says otherwise]' -r
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand oci-hook" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand oci-hook" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand oci-hook" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand oci-hook" -l install -d 'Do not judge a container: copy this binary to <root>/opt/nfs-gds/bin and its hooks.d file into the hooks directory below the root (the DaemonSet\'s installer on CRI-O nodes)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand oci-hook" -l uninstall -d 'Remove what --install wrote below the root'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand oci-hook" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand oci-hook" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and not __fish_seen_subcommand_from check show help" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and not __fish_seen_subcommand_from check show help" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and not __fish_seen_subcommand_from check show help" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and not __fish_seen_subcommand_from check show help" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and not __fish_seen_subcommand_from check show help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and not __fish_seen_subcommand_from check show help" -f -a "check" -d 'Validate a policy file (default: the one in force) under the trust rules; exit 0 when valid, 2 listing every error'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and not __fish_seen_subcommand_from check show help" -f -a "show" -d 'Show the effective level of every check, and the wait, for a mount (or the node)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and not __fish_seen_subcommand_from check show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from check" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from check" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from check" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from check" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from show" -l target -d 'The mount point, as in fstab (matches `target` of a `[[mount]]` table)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from show" -l source -d 'The source, as in fstab, e.g. server:/export (matches `source` of a `[[mount]]` table)' -r
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from show" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from show" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from show" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from show" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from help" -f -a "check" -d 'Validate a policy file (default: the one in force) under the trust rules; exit 0 when valid, 2 listing every error'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show the effective level of every check, and the wait, for a mount (or the node)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand policy; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand lint" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand lint" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand lint" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand lint" -l json -d 'Print the findings as JSON'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand lint" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand lint" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand completions" -l root -d 'Read the host below DIR instead of / (for fixture trees and collected bundles)' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand completions" -l config -d 'Policy file [default: /etc/nfs-gds/nfs-gds.toml]' -r -F
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand completions" -l color -d 'Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never' -r -f -a "auto\t'Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value'
always\t'Always colour, even into a pipe or file, and whatever `NO_COLOR` says'
never\t'Never colour'"
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand completions" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "check" -d 'Run the pre-mount checks for this node, as the mount helper would'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "inspect-module" -d 'Show what a kernel module file really contains (hooks, exports, identity)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "doctor" -d 'Explain what is wrong on this node and how to fix it for its stack'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "provision" -d 'Print doctor\'s plan, or with --apply run its safe, idempotent steps'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "collect" -d 'Write a support bundle of everything doctor reads (replay it with --root)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "agent" -d 'Publish readiness for fleets: NFD labels, Prometheus textfile, status JSON'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "mount" -d 'Mount over NFS/RDMA as the mount(8) helper does (exit codes are mount(8)\'s)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "verify" -d 'Run the post-mount checks for an existing mount'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "watch" -d 'Watch a mount while a workload runs: did nvidia-fs move the bytes it served?'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "oci-hook" -d 'OCI runtime hook: refuse a container whose NFS volume meant for GDS is not ready (state on stdin)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "policy" -d 'Validate a policy file, or show the level of every check for a mount'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "lint" -d 'Check Kubernetes manifests (ClusterPolicy, NicClusterPolicy, NFS StorageClass/PV) for GDS'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "completions" -d 'Print a shell completion script (e.g. `nfs-gds completions bash`)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and not __fish_seen_subcommand_from check inspect-module doctor provision collect agent mount verify watch oci-hook policy lint completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and __fish_seen_subcommand_from policy" -f -a "check" -d 'Validate a policy file (default: the one in force) under the trust rules; exit 0 when valid, 2 listing every error'
complete -c nfs-gds -n "__fish_nfs_gds_using_subcommand help; and __fish_seen_subcommand_from policy" -f -a "show" -d 'Show the effective level of every check, and the wait, for a mount (or the node)'
