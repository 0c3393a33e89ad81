"""A Hugging Face Trainer script as Determined users write it: det.transformers.DetCallback
reports metrics and checkpoints (imports only `determined`, the framework and the stdlib)."""

import determined as det
import torch
from determined.transformers import DetCallback
from torch import nn
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> dict:
        logits = self.linear(x)
        if labels is None:
            return {"logits": logits}
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


class Points(Dataset):
    def __init__(self, n: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 4, generator=generator)
        self.y = (self.x.sum(dim=1) > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict:
        return {"x": self.x[i], "labels": self.y[i]}


def main() -> None:
    torch.set_num_threads(1)
    info = det.get_cluster_info()
    with det.core.init() as core_context:
        args = TrainingArguments(
            output_dir="hf_output",
            max_steps=12,
            per_device_train_batch_size=8,
            learning_rate=float(info.trial.hparams["lr"]),
            logging_steps=4,
            eval_strategy="steps",
            eval_steps=6,
            save_strategy="steps",
            save_steps=6,
            report_to="none",
            disable_tqdm=True,
            use_cpu=True,
        )
        det_callback = DetCallback(core_context, args)
        trainer = Trainer(
            model=Tiny(),
            args=args,
            train_dataset=Points(96, 0),
            eval_dataset=Points(32, 1),
            callbacks=[det_callback],
        )
        trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)


if __name__ == "__main__":
    main()
