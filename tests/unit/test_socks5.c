/* SPDX-License-Identifier: MIT */
#include "t.h"
T_SUITE("socks5");
int main(void)
{
	return t_finish();
}
