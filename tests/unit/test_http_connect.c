/* SPDX-License-Identifier: MIT */
#include "t.h"
T_SUITE("http_connect");
int main(void)
{
	return t_finish();
}
