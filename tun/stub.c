/* SPDX-License-Identifier: MIT */
/* Keeps the static library non-empty until the layer has code. */
int spliced_tun_stub;
