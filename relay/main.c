/* SPDX-License-Identifier: MIT */
#include <stdio.h>
int main(void)
{
	puts("spliced: not yet");
	return 0;
}
