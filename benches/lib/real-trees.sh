# Sourced by benches/real-node.sh: node trees as a Debian 12 node has them, built from the
# distribution's own kernel packages and cached under $cache (NFS_GDS_BENCH_CACHE).
#
#   $cache/debs/linux-image-R_*.deb           apt-get download, once per kernel
#   $cache/R/pkg/                             the package unpacked (dpkg-deb -x)
#   $cache/R/packed-P/                        every module of the package recompressed for
#                                             packing P (plain, zst, xz) with the flags of the
#                                             kernel's modules_install
#   $cache/R/node-P-H/lib/modules/R/          P's modules, a generated rpcrdma with hooks H
#                                             (gpl, plain) in updates/dkms/, `depmod -b` run
#   $cache/R/dkms-rpcrdma-H.ko, .build-id-note
#                                             that rpcrdma, plain, and its raw build-id ELF
#                                             note; it imports what the package's own
#                                             rpcrdma.ko imports, with the same CRCs, as a
#                                             DKMS build against this kernel does
#   $cache/kallsyms                           the real-sized kallsyms, without module lines
#   $cache/debs/linux-headers-R_*.deb         apt-get download, once per kernel: the build's
#   $cache/R/headers/                         Module.symvers (every export's CRC), unpacked;
#                                             its dependency linux-headers-R-common (the
#                                             rest of the headers) is not needed here
#
# make_root then lays a node root over hard links into the cache (nothing below a root is
# ever written by what is measured). Needs $cache, $work, $gen (examples/gen-module) and the
# tools checked by real-node.sh.

# The kernel's modules_install flags (scripts/Makefile.modinst of 6.1).
compress_in_place() { # packing files... (the files are replaced by their compressed form)
    case $1 in
        plain) ;;
        zst) shift; zstd -T0 --rm -f -q "$@" ;;
        xz) shift; xz --check=crc32 --lzma2=dict=1MiB -f "$@" ;;
    esac
}
suffix_of() { case $1 in plain) echo .ko ;; zst) echo .ko.zst ;; xz) echo .ko.xz ;; esac; }

# The package names of the kernels to use: KERNELS, else the three newest Debian 12 amd64
# images the apt sources carry (the first is the running kernel).
pick_kernels() {
    if [ -n "${KERNELS:-}" ]; then
        echo "$KERNELS" | tr ' ' '\n'
        return
    fi
    apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | cut -d' ' -f1 | sort -rV | head -3
}

fetch_kernel() { # package -> prints the release (6.1.0-N-amd64)
    local package=$1 release=${1#linux-image-} deb
    mkdir -p "$cache/debs"
    if ! ls "$cache/debs/${package}"_*.deb >/dev/null 2>&1; then
        (cd "$cache/debs" && apt-get download -q "$package" >&2) ||
            { echo "real-node: apt-get download $package failed" >&2; return 1; }
    fi
    deb=$(ls "$cache/debs/${package}"_*.deb | sort -V | tail -1)
    if [ ! -d "$cache/$release/pkg/lib/modules/$release" ]; then
        rm -rf "$cache/$release/pkg.tmp"
        mkdir -p "$cache/$release"
        dpkg-deb -x "$deb" "$cache/$release/pkg.tmp"
        dpkg-deb -f "$deb" Version >"$cache/$release/pkg.tmp/deb-version"
        mv "$cache/$release/pkg.tmp" "$cache/$release/pkg"
    fi
    echo "$release"
}

fetch_headers() { # release: its linux-headers-<release> package, unpacked (cached)
    local release=$1 package=linux-headers-$1 deb dir=$cache/$1/headers
    [ -f "$dir/usr/src/$package/Module.symvers" ] && return
    mkdir -p "$cache/debs"
    if ! ls "$cache/debs/${package}"_*.deb >/dev/null 2>&1; then
        (cd "$cache/debs" && apt-get download -q "$package" >&2) ||
            { echo "real-node: apt-get download $package failed" >&2; return 1; }
    fi
    deb=$(ls "$cache/debs/${package}"_*.deb | sort -V | tail -1)
    rm -rf "$dir.tmp"
    dpkg-deb -x "$deb" "$dir.tmp"
    [ -f "$dir.tmp/usr/src/$package/Module.symvers" ] ||
        { echo "real-node: $package has no usr/src/$package/Module.symvers" >&2; return 1; }
    mv "$dir.tmp" "$dir"
}

packed_modules() { # release packing: every module of the package, recompressed (cached)
    local release=$1 packing=$2 dir=$cache/$1/packed-$2
    [ -d "$dir" ] && return
    echo "real-node: recompressing the modules of $release as $packing (once; minutes for xz)" >&2
    rm -rf "$dir.tmp"
    cp -a "$cache/$release/pkg/lib/modules/$release/kernel" "$dir.tmp"
    export -f compress_in_place
    find "$dir.tmp" -name '*.ko' -print0 |
        xargs -0 -n 32 -P "$(nproc)" bash -c 'compress_in_place "$0" "$@"' "$packing"
    mv "$dir.tmp" "$dir"
}

generated_rpcrdma() { # release hooks: the plain module and its build-id note (cached)
    local release=$1 hooks=$2 ko=$cache/$1/dkms-rpcrdma-$2.ko
    [ -f "$ko.build-id-note" ] && return
    modprobe --dump-modversions \
        "$cache/$release/pkg/lib/modules/$release/kernel/net/sunrpc/xprtrdma/rpcrdma.ko" >"$ko.imports"
    "$gen" "$ko" --release "$release" --hooks "$hooks" --pad 819200 --imports "$ko.imports" \
        --srcversion 0A1B2C3D4E5F60718293A4B --build-id "nfs-gds-bench-$release-$hooks"
    # What /sys/module/rpcrdma/notes/.note.gnu.build-id holds: the section's raw bytes.
    objcopy -O binary --only-section=.note.gnu.build-id "$ko" "$ko.build-id-note.tmp"
    mv "$ko.build-id-note.tmp" "$ko.build-id-note"
}

module_tree() { # release packing hooks: the indexed module tree (cached)
    local release=$1 packing=$2 hooks=$3 top=$cache/$1/node-$2-$3
    local tree=$top/lib/modules/$1 dkms
    [ -f "$top/.done" ] && return
    packed_modules "$release" "$packing"
    generated_rpcrdma "$release" "$hooks"
    rm -rf "$top"
    mkdir -p "$tree/updates/dkms"
    cp -al "$cache/$release/packed-$packing" "$tree/kernel"
    cp "$cache/$release/pkg/lib/modules/$release"/modules.{order,builtin,builtin.modinfo} "$tree/"
    dkms=$tree/updates/dkms/rpcrdma.ko
    cp "$cache/$release/dkms-rpcrdma-$hooks.ko" "$dkms"
    compress_in_place "$packing" "$dkms"
    depmod -b "$top" "$release"
    touch "$top/.done"
}

# The kernel's own symbols at a real size: this host's /proc/kallsyms when it has at least
# 50,000 lines (its module lines dropped: make_root adds the tree's), else lines shaped like
# the kernel's, as many as a Debian 12 kernel has (122,000), said so on stderr.
real_kallsyms() {
    local lines
    [ -f "$cache/kallsyms" ] && return
    lines=$(grep -vc '\[' /proc/kallsyms || true)
    if [ "$lines" -ge 50000 ]; then
        grep -v '\[' /proc/kallsyms >"$cache/kallsyms.tmp"
        echo "host /proc/kallsyms, $lines lines" >"$cache/kallsyms.source"
    else
        awk 'BEGIN { t = "TtTtDdBbRr"; for (i = 0; i < 122000; i++)
            printf "ffffffff%08x %s kernel_symbol_%d\n", 0x81000000 + i * 64, substr(t, i % 10 + 1, 1), i }' \
            >"$cache/kallsyms.tmp"
        echo "synthetic, 122000 lines (the host's /proc/kallsyms has $lines)" >"$cache/kallsyms.source"
    fi
    mv "$cache/kallsyms.tmp" "$cache/kallsyms"
}

# kallsyms lines of a loaded module: the symbols its file defines, as the kernel lists them
# (kernel/module/kallsyms.c): the type letter upper-case only for a symbol in the module's
# non-GPL export table (__ksymtab), lower-case for every other, GPL exports included.
module_kallsyms() { # module-file name
    local f=$1 name=$2 elf=$work/ksyms.ko
    case $f in
        *.zst) zstd -q -d -c "$f" >"$elf" ;;
        *.xz) xz -dc "$f" >"$elf" ;;
        *) elf=$f ;;
    esac
    objdump -t "$elf" | awk '/ __ksymtab\t/ && $NF ~ /^__ksymtab_/ { sub(/^__ksymtab_/, "", $NF); print $NF }' \
        >"$work/plain-exports"
    nm --defined-only "$elf" | awk -v m="$name" 'FILENAME == ARGV[1] { plain[$1] = 1; next }
        $2 ~ /^[tTdDbBrR]$/ { t = ($3 in plain) ? toupper($2) : tolower($2)
            printf "ffffffffc%07x %s %s\t[%s]\n", FNR * 16, t, $3, m }' "$work/plain-exports" -
}

# make_root ROOT PACKING STATE HOOKS RELEASE... : a node with RELEASEs installed (the first
# running), nvidia_fs loaded, a DKMS rpcrdma with HOOKS for each; STATE cold (rpcrdma not
# loaded) or loaded (rpcrdma, its dependencies and nvidia_fs loaded, /sys/module/rpcrdma with
# srcversion and the build-id note). With headers=with (a global; default without) each
# release also has its headers package's /usr/src/linux-headers-<release> and the tree's
# `build` link to it, as a node that builds DKMS modules has them.
make_root() {
    local root=$1 packing=$2 state=$3 hooks=$4
    shift 4
    local running=$1 rel tree
    rm -rf "$root"
    mkdir -p "$root/proc/sys/kernel" "$root/proc/self" "$root/boot" "$root/sys/module/nvidia_fs" \
        "$root/dev" "$root/lib/modules"
    for rel in "$@"; do
        module_tree "$rel" "$packing" "$hooks"
        cp -al "$cache/$rel/node-$packing-$hooks/lib/modules/$rel" "$root/lib/modules/$rel"
        ln "$cache/$rel/pkg/boot/config-$rel" "$cache/$rel/pkg/boot/vmlinuz-$rel" "$root/boot/"
        if [ "${headers:-without}" = with ]; then
            fetch_headers "$rel"
            mkdir -p "$root/usr/src"
            cp -al "$cache/$rel/headers/usr/src/linux-headers-$rel" "$root/usr/src/"
            ln -sfn "/usr/src/linux-headers-$rel" "$root/lib/modules/$rel/build"
        fi
    done
    echo "$running" >"$root/proc/sys/kernel/osrelease"
    echo "Linux version $running (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian $(cat "$cache/$running/pkg/deb-version")" \
        >"$root/proc/version"
    echo "BOOT_IMAGE=/boot/vmlinuz-$running root=UUID=1b2c ro quiet" >"$root/proc/cmdline"
    echo "1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw" >"$root/proc/self/mountinfo"
    echo 2.28.4 >"$root/sys/module/nvidia_fs/version"
    : >"$root/dev/nvidia-fs0"
    tree=$root/lib/modules/$running
    local sunrpc ib_core rdma_cm rpcrdma
    sunrpc=$(ls "$tree"/kernel/net/sunrpc/sunrpc.ko*)
    ib_core=$(ls "$tree"/kernel/drivers/infiniband/core/ib_core.ko*)
    rdma_cm=$(ls "$tree"/kernel/drivers/infiniband/core/rdma_cm.ko*)
    rpcrdma=$(ls "$tree"/updates/dkms/rpcrdma.ko*)
    {
        cat "$cache/kallsyms"
        printf 'ffffffffc1000000 t nvfs_mgroup_pin_shadow_pages\t[nvidia_fs]\nffffffffc1000100 t nvfs_io_start_op\t[nvidia_fs]\n'
        module_kallsyms "$sunrpc" sunrpc
        if [ "$state" = loaded ]; then
            module_kallsyms "$ib_core" ib_core
            module_kallsyms "$rdma_cm" rdma_cm
            module_kallsyms "$rpcrdma" rpcrdma
        fi
    } >"$root/proc/kallsyms"
    if [ "$state" = loaded ]; then
        printf '%s\n' 'rpcrdma 430080 0 - Live 0x0000000000000000' \
            'rdma_cm 143360 1 rpcrdma, Live 0x0000000000000000' \
            'ib_core 462848 2 rpcrdma,rdma_cm, Live 0x0000000000000000' \
            'nvidia_fs 270336 0 - Live 0x0000000000000000 (OE)' \
            'sunrpc 724992 1 rpcrdma, Live 0x0000000000000000' >"$root/proc/modules"
        mkdir -p "$root/sys/module/rpcrdma/notes"
        echo 0A1B2C3D4E5F60718293A4B >"$root/sys/module/rpcrdma/srcversion"
        cp "$cache/$running/dkms-rpcrdma-$hooks.ko.build-id-note" \
            "$root/sys/module/rpcrdma/notes/.note.gnu.build-id"
    else
        printf '%s\n' 'nvidia_fs 270336 0 - Live 0x0000000000000000 (OE)' \
            'sunrpc 724992 0 - Live 0x0000000000000000' >"$root/proc/modules"
    fi
}
