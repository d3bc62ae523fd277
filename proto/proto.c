/* SPDX-License-Identifier: MIT */
/* Placeholder until implemented. */
