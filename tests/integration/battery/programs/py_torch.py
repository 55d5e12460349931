"""py_torch.py: a PyTorch DataLoader with 2 worker processes reading sample files."""
import os

import torch
from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, folder):
        self.paths = sorted(os.path.join(folder, n) for n in os.listdir(folder))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            data = f.read()
        return torch.tensor(sum(data) % 100003)


def main():
    torch.manual_seed(0)
    loader = DataLoader(Files("samples"), batch_size=4, num_workers=2)
    sums = [int(b.sum()) for b in loader]
    print("batches", len(sums), "sums", sums)
    torch.save(torch.tensor(sums), "sums.pt")


if __name__ == "__main__":
    main()
