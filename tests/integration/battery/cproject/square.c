long square_area(long side) { return side * side; }
