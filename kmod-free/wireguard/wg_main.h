/* SPDX-License-Identifier: MIT */
/* `spliced wg ...`: key helpers and bringing a userspace WireGuard interface up or down. */
#ifndef SPLICED_WG_WG_MAIN_H
#define SPLICED_WG_WG_MAIN_H

/* argv[0] is "wg"; returns the process exit status. */
int wg_main(int argc, char **argv);

#endif
