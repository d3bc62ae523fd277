/* SPDX-License-Identifier: MIT */
/* `spliced wg ...`: key helpers and bringing a userspace WireGuard interface up or down. */
#ifndef SPLICED_APP_WG_CLI_H
#define SPLICED_APP_WG_CLI_H

/* argv[0] is "wg"; returns the process exit status. */
int wg_main(int argc, char **argv);

#endif
