# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The project's own meson build (engine, unit tests, benchmarks, guest programs).

# nf_host_configure: the host build configured (meson setup), and meson's
# view of it up to date with the meson.build files (the suites' table).
nf_host_configure() {
    # The training program bakes a small Fashion-MNIST subset in at configure time.
    nf_need "${NF_PKGS_BUILD[@]}" dataset-fashion-mnist
    if [ ! -f "$NF_HOST_BUILD/build.ninja" ]; then
        nf_log "configuring the host build in $NF_HOST_BUILD"
        meson setup "$NF_HOST_BUILD" "$NF_ROOT" >/dev/null ||
            nf_die "meson setup of the host build failed"
    else
        ninja -C "$NF_HOST_BUILD" build.ninja >"$NF_BUILD/host-ninja.log" 2>&1 || {
            tail -20 "$NF_BUILD/host-ninja.log" >&2
            nf_die "meson could not reconfigure the host build (log: $NF_BUILD/host-ninja.log)"
        }
    fi
}

nf_host_build() {
    nf_host_configure
    ninja -C "$NF_HOST_BUILD" -j "$(nproc)" >"$NF_BUILD/host-ninja.log" 2>&1 || {
        tail -40 "$NF_BUILD/host-ninja.log" >&2
        nf_die "host build failed (log: $NF_BUILD/host-ninja.log)"
    }
}
