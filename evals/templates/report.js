// Filters: hide the columns and transcripts of unticked runs, and every row but the chosen task.
(function () {
  var form = document.getElementById("filters");
  if (!form) {
    return;
  }
  function apply() {
    var shown = {};
    form.querySelectorAll(".run-filter").forEach(function (box) {
      shown[box.value] = box.checked;
    });
    var task = document.getElementById("task-filter").value;
    document.querySelectorAll("[data-run]").forEach(function (el) {
      var hideTask = task !== "" && el.dataset.task !== undefined && el.dataset.task !== task;
      el.classList.toggle("hidden", !shown[el.dataset.run] || hideTask);
    });
    document.querySelectorAll("tr[data-task]").forEach(function (row) {
      row.classList.toggle("hidden", task !== "" && row.dataset.task !== task);
    });
  }
  form.addEventListener("change", apply);
  apply();
})();
