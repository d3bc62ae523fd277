/* SPDX-License-Identifier: MIT */
/* Unit tests for relay/config.c and relay/users.c. */
#include "t.h"
#include "config.h"
T_SUITE("config");
int main(void)
{
	return t_finish();
}
