long circle_area_x100(long r) { return 314 * r * r; }
