// How often each model's tool calls needed repair (router/tool-repair.ts counts, /fleet/queue shows):
// a model that needs repairs often is unreliable with tools.
export interface RepairCounts {
  attempts: number;
  successes: number;
  failures: number;
}

export class RepairStats {
  private byModel = new Map<string, RepairCounts>();

  counter(model: string): (outcome: keyof RepairCounts) => void {
    return (outcome) => {
      const counts = this.byModel.get(model) ?? { attempts: 0, successes: 0, failures: 0 };
      counts[outcome]++;
      this.byModel.set(model, counts);
    };
  }

  of(model: string): RepairCounts | undefined {
    return this.byModel.get(model);
  }
}
