# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Suite `checkout`: the project as a new user meets it (issue 20).  A copy
# of the checkout under /root whose path has a space runs its commands,
# builds where QEMU accepts a path, reports a failing command with its file
# and line, survives a missing download cache, and its --hostfs guests see
# it.  The copy reuses this checkout's build (NF_BUILD) for the guest, so
# nothing is rebuilt.

NF_CHECKOUT_COPY="/root/nfabric checkout test"


# nf_checkout_copy DEST: the files of this checkout (tracked, and new ones
# not ignored), as they are in the work tree, copied to DEST.
nf_checkout_copy() {
    rm -rf "$1"
    mkdir -p "$1"
    git -C "$NF_ROOT" ls-files -z --cached --others --exclude-standard |
        (cd "$NF_ROOT" && tar --null -T - -cf -) | tar -xf - -C "$1"
}

nf_suite_checkout() {
    local copy=$NF_CHECKOUT_COPY out st link line
    nf_checkout_copy "$copy"
    nf_tap $? "copied the checkout to \"$copy\""

    # 1. Its commands run from there (no NF_BUILD given: its own build dir).
    out=$(cd / && env -u NF_BUILD "$copy/scripts/nfabric" --help 2>&1); st=$?
    nf_tap "$([ "$st" = 0 ] && grep -q '^Commands:' <<<"$out" && echo 0 || echo 1)" \
        "scripts/nfabric --help from the copy (status $st)"
    out=$(env -u NF_BUILD "$copy/scripts/nfabric" test --list 2>&1); st=$?
    nf_tap "$([ "$st" = 0 ] && grep -qx lint <<<"$out" && echo 0 || echo 1)" \
        "scripts/nfabric test --list from the copy lists the suites (status $st)"
    link=$(readlink "$copy/build" || true)
    nf_tap "$([[ "$link" == /var/tmp/nfabric-build-* && "$link" != *[[:space:]:]* ]] && echo 0 || echo 1)" \
        "its build directory is a path QEMU's configure accepts: build -> ${link:-nothing}"

    # 2. A failing command inside set-up says what failed and where.
    line=$(grep -n '^nf_setup_main() {' "$copy/scripts/lib/qemu.sh" | cut -d: -f1)
    sed -i "${line}a\\    false  # injected by suite checkout" "$copy/scripts/lib/qemu.sh"
    out=$(env -u NF_BUILD "$copy/scripts/nfabric" setup 2>&1); st=$?
    echo "# $out"
    nf_tap "$([ "$st" != 0 ] && grep -qF "\"false\" failed with status 1 at $copy/scripts/lib/qemu.sh:$((line + 1)) (in nf_setup_main)" <<<"$out" && echo 0 || echo 1)" \
        "a failing command in set-up is reported with its text, status, file and line (status $st)"
    sed -i '/# injected by suite checkout$/d' "$copy/scripts/lib/qemu.sh"

    # 3. A missing cache directory is not an exit: the original fault.
    # shellcheck disable=SC2016  # the inner shell expands $1 and the rest
    out=$(env -u NF_BUILD NF_CACHE=/nonexistent/nfabric-cache bash -c '
        set -euo pipefail
        . "$1/scripts/lib/common.sh"
        d=$(nf_newest_dir "$NF_CACHE/qemu" "qemu-10.0*")
        f=$(nf_newest_file "$NF_CACHE/debs" "linux-image-*.deb")
        echo "survived:[$d][$f]"' sh "$copy" 2>&1); st=$?
    nf_tap "$([ "$st" = 0 ] && [ "$out" = "survived:[][]" ] && echo 0 || echo 1)" \
        "looking up a download cache that does not exist yet returns nothing and goes on ($out)"

    # 4. A --hostfs guest started from the copy sees the copy: a script and
    # a Python program of it run in the guest under chroot /host.
    # shellcheck disable=SC2016  # a script for the guest: its $0
    printf '%s\n' '#!/bin/sh' 'echo "HOSTFS-SH-OK $(cat "$(dirname "$0")/marker")"' > "$copy/hostfs check.sh"
    printf '%s\n' 'import os, sys' \
        'print("HOSTFS-PY-OK", open(os.path.join(os.path.dirname(sys.argv[0]), "marker")).read().strip(), os.environ.get("HOME"))' \
        > "$copy/hostfs check.py"
    echo "marker-$$" > "$copy/marker"
    local log=$NF_BUILD/test-logs/checkout-hostfs-console.log
    mkdir -p "$NF_BUILD/test-logs"
    rm -f "$log"
    nf_image_main >&2     # this checkout's image, which the copy's guest boots
    NF_BUILD=$NF_BUILD "$copy/scripts/nfabric" vm --quiet --hostfs --log "$log" --timeout 600 \
        --run "chroot /host /bin/sh $(printf %q "$copy/hostfs check.sh") && chroot /host /usr/bin/python3 $(printf %q "$copy/hostfs check.py")" \
        > "$log.out" 2>&1
    st=$?
    [ -f "$log" ] || { sed 's/^/# vm: /' "$log.out"; : > "$log"; }
    nf_tap "$(tr -d '\r' < "$log" | grep -qx "HOSTFS-SH-OK marker-$$" && echo 0 || echo 1)" \
        "a --hostfs guest runs a script of the checkout under /root by its path with a space (vm status $st)"
    nf_tap "$(tr -d '\r' < "$log" | grep -qx "HOSTFS-PY-OK marker-$$ /dev/shm/home" && echo 0 || echo 1)" \
        "the host's Python in that guest reads the checkout, with a writable HOME"
    [ "$NF_TAP_FAILED" = 0 ] || tr -d '\r' < "$log" | tail -20 | sed 's/^/# guest: /'

    link=$(readlink "$copy/build" || true)
    [[ "$link" == /var/tmp/nfabric-build-* ]] && rm -rf "$link"
    rm -rf "$copy"
    return "$NF_TAP_FAILED"
}
