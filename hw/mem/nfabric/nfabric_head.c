/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: the head's base, which every other file
 * of the controller may call and which calls none of them (the layering is
 * in nfabric_ctrl_int.h).  A head's window events and errors, the failure
 * of a shared state that cannot be trusted, the lock wrappers, and the
 * path names.  Pure C11.  Calls only the shared state (nfabric_shared.h).
 */
#include <errno.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

void nfabric_win_event(NFabricCtrl *s, NFabricWinEvent ev,
                       unsigned win, uint32_t code)
{
    if (s->ops && s->ops->window) {
        s->ops->window(s->opaque, ev, win, code);
    }
}

#define NFABRIC_X_PATH_NAME(n, v, str) [v] = str,
const char *const nfabric_path_names[NFABRIC_NUM_PATHS] = {
    NFABRIC_PATHS(NFABRIC_X_PATH_NAME)
};

void nfabric_set_error(NFabricCtrl *s, int win, uint32_t code,
                       uint64_t off, const char *what)
{
    s->last_error = code;
    s->error_count++;
    nfabric_cpmu_count(s, NFABRIC_CPMU_GROUP_DEVICE,
                       NFABRIC_CPMU_EV_REFUSED, 1);
    if (code >= 1 && code <= NFABRIC_ERR_MAX) {
        nfabric_cpmu_count(s, NFABRIC_CPMU_GROUP_REFUSALS, code - 1, 1);
    }
    if (win >= 0) {
        s->sh->win[win].error = code;
    }
    if (s->ops && s->ops->guest_error) {
        s->ops->guest_error(s->opaque, off, code, what);
    }
}

/* ---- a shared state that cannot be trusted --------------------------- */

/*
 * The state file is unusable: say why once, then refuse the device's
 * accesses for good (this head's own registers still work).
 */
void nfabric_fail(NFabricCtrl *s, const char *why)
{
    if (s->failed) {
        return;
    }
    s->failed = true;
    snprintf(s->failure, sizeof(s->failure), "%s", why);
    if (s->ops && s->ops->state_failed) {
        s->ops->state_failed(s->opaque, s->failure);
    } else {
        fprintf(stderr, "nfabric: head %u: %s; the head refuses the "
                "device's accesses\n", s->head, s->failure);
    }
}

/* Is the shared state still usable (identity, size, mapping)? */
bool nfabric_state_ok(NFabricCtrl *s)
{
    char why[sizeof(s->failure)];

    if (!s->shared) {
        return true;
    }
    if (s->failed) {
        return false;
    }
    s->faults_seen = nfabric_shared_faults();
    if (nfabric_shared_check(s->sh, why, sizeof(why)) != 0) {
        nfabric_fail(s, why);
        return false;
    }
    return true;
}

/*
 * A shared lock could not be taken: a corrupted lock makes the state
 * unusable; one held too long fails only this operation.
 */
void nfabric_lock_failed(NFabricCtrl *s, const char *which, int win)
{
    char why[96];

    if (errno == ETIMEDOUT || errno == EAGAIN || !nfabric_state_ok(s)) {
        /* Held too long, a bias not taken back now, or already reported. */
        return;
    }
    if (win >= 0) {
        snprintf(why, sizeof(why), "the lock of window %d in the state file "
                 "is corrupted", win);
    } else {
        snprintf(why, sizeof(why), "the %s lock in the state file is "
                 "corrupted", which);
    }
    nfabric_fail(s, why);
}

void nfabric_unlock_job(NFabricCtrl *s)
{
    if (s->shared) {
        nfabric_shared_unlock_job(s->sh, s->locked_job);
    }
}

bool nfabric_lock_win(NFabricCtrl *s, unsigned i)
{
    if (!s->shared) {
        return true;
    }
    if (!nfabric_shared_lock_win(s->sh, i)) {
        nfabric_lock_failed(s, "window", (int)i);
        return false;
    }
    return true;
}

void nfabric_unlock_win(NFabricCtrl *s, unsigned i)
{
    if (s->shared) {
        nfabric_shared_unlock_win(s->sh, i);
    }
}

/* A register write the shared state could not take: error STATE. */
void nfabric_state_refused(NFabricCtrl *s, uint64_t off)
{
    nfabric_set_error(s, -1, NFABRIC_ERR_STATE, off, s->failed ?
                      "write refused: the shared state is unusable" :
                      "write refused: the shared state stayed busy past "
                      "its bound");
}
